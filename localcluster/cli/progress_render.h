// The progress text `sluice run` prints while following. Pure: values in, text out.
//
// Plain (stdout not a terminal): one line per TrainerJob per sample, e.g.
//   12:00:05 tiny-grpo Running step 12/200 v12 reward 0.41 loss 0.12 eval 0.38 rollout 5230
//   tok/s train 1200 tok/s wait 12% buffer 64 staleness 0.8 replicas local-eu-west=1
//   local-us-east=2
// (one line; wrapped here). Unknown values are "-"; "replicas" lists the regions, else the total;
// "wait" is the share of the trainer's last step spent waiting for a batch.
//
// Live (a terminal): a compact view of every object, redrawn in place. LiveRedraw moves the
// cursor up over the previous frame ("ESC [ n A", carriage return), rewrites each line after
// clearing it ("ESC [ 2 K") and clears whatever the previous, longer frame left below ("ESC [ J").
// No curses, no terminal size query: lines are short enough for 100 columns in the usual case.
//
// Numbers: integers as they are; other values with three significant digits below 100 ("0.413",
// "12.5") and rounded to an integer from 100 up ("5230").
//
// Thread safety: pure functions (ClockText reads the local time zone).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "localcluster/cli/experiment_status.h"
#include "localcluster/cli/progress_row.h"

namespace sluice::cli {

// "-" for nullopt.
std::string FormatNumber(std::optional<double> value);
std::string FormatInt(std::optional<int64_t> value);
// "12/200", "12/-", "-/200".
std::string FormatStepProgress(std::optional<int64_t> step, std::optional<int64_t> steps);
// A share (0 to 1) as a whole percentage: 0.123 -> "12%"; "-" for nullopt.
std::string FormatShare(std::optional<double> share);

// "HH:MM:SS" of `t` (seconds since the epoch) in the local time zone.
std::string ClockText(double t);

// The plain line of one row, without a newline; `clock` is ClockText(row.t) (tests pass a fixed
// one).
std::string PlainLine(const ProgressRow& row, const std::string& clock);

// The live view: a header line naming the experiment, the time and the interval, then tables of
// the TrainerJobs, Dataflows and RolloutPools (each omitted when empty). Ends with a newline.
std::string LiveView(const std::string& experiment, const std::string& clock,
                     double interval_seconds, const ExperimentView& view);

// How many lines `text` has (its newlines, plus one for an unterminated last line).
size_t LineCount(const std::string& text);

// What to write to replace the `previous_lines` lines printed last (0: the first frame) with
// `frame` (newline-terminated lines).
std::string LiveRedraw(size_t previous_lines, const std::string& frame);

}  // namespace sluice::cli
