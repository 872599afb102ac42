// Framing: how encoded messages are delimited and checksummed on a byte stream or in a file.
//
// A frame is a 20-byte header (magic, version, type, flags, reserved, payload length, header
// CRC), the payload, and a 4-byte trailer CRC over header and payload; layout in format.h and
// docs/wire-format.md. The header has its own CRC so a damaged length is caught before a reader
// trusts it: a flipped bit can neither make a reader wait for bytes that will never come nor
// mis-split the stream. The payload length is a u32, capped at kMaxFramePayloadBytes (1 GiB).
//
// Three ways in, all built on ScanFrame:
//  - FrameReader: a complete buffer (a file read or mapped into memory).
//  - FrameStreamReader: bytes arriving in pieces (a socket); it says when it needs more.
//  - ScanFrame: the stateless step, for callers that manage their own buffers.
//
// Errors, with Status::field() naming the part that was bad:
//  - Corruption "frame.magic": the bytes do not start with "SLW1".
//  - InvalidArgument "frame.version": a version this reader does not support; the message names
//    the frame's version and the newest supported one.
//  - Corruption "frame.header_crc": the header is damaged.
//  - InvalidArgument "frame.flags" / "frame.reserved": bits this version does not define.
//  - TooLarge "frame.payload_length": over the reader's limit, reported as soon as the header is
//    in, before any payload is awaited or buffered.
//  - Corruption "frame.crc": the header or payload is damaged.
//  - Corruption "frame", message starting "truncated frame": the input ended inside a frame.
//    FrameReader::truncated() reports this case without parsing messages; a stream reader sees
//    "need more bytes" instead until it calls Finish().
// Clean end of input (nothing left, or only whole frames) is not an error.
//
// Thread safety: none for the reader classes; one thread per reader. Sizes are in bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/wire/format.h"

namespace sluice::wire {

struct Frame {
  uint16_t type = 0;  // Message kind, chosen by the writer's protocol.
  // Views the reader's input; valid as long as those bytes are (see each reader).
  std::string_view payload;
};

struct FrameReaderOptions {
  // Frames whose payload is longer are rejected with TooLarge. Values above
  // kMaxFramePayloadBytes are treated as kMaxFramePayloadBytes.
  uint32_t max_payload_bytes = kDefaultReaderMaxPayloadBytes;
};

// Appends one frame holding payload to *out. TooLarge when the payload is over
// kMaxFramePayloadBytes; *out is then unchanged.
Status AppendFrame(uint16_t type, std::string_view payload, std::string* out);
// The same, as a new string.
Result<std::string> EncodeFrame(uint16_t type, std::string_view payload);

// Building a frame in place, so a large payload is encoded straight into the output with no
// copy: BeginFrame reserves the header and returns the frame's start offset; the caller appends
// the payload (e.g. with an Encoder on the same string); FinishFrame fills in the header and
// appends the trailer. On error (payload over kMaxFramePayloadBytes) FinishFrame cuts *out back
// to frame_start and returns TooLarge.
size_t BeginFrame(std::string* out);
Status FinishFrame(uint16_t type, size_t frame_start, std::string* out);

// The result of looking at the bytes at the front of a buffer.
struct FrameScan {
  // True: frame is valid and the whole frame is the first frame_size bytes.
  // False: the bytes are a valid prefix of a frame so far; bytes_needed (counted from the start
  // of the frame, always more than were given) must be present before the scan can go further.
  // It is the header size until the header is in, then the whole frame's size.
  bool complete = false;
  Frame frame;
  size_t frame_size = 0;
  size_t bytes_needed = 0;
};
// Checks as much of a frame as bytes holds, in header order, and never reads past bytes. Errors
// as listed above, except truncation, which is an incomplete FrameScan.
Result<FrameScan> ScanFrame(std::string_view bytes, const FrameReaderOptions& options = {});

// Reads frames from a complete buffer, e.g. a whole file:
//   FrameReader reader(bytes);
//   while (!reader.AtEnd()) {
//     SLUICE_ASSIGN_OR_RETURN(Frame f, reader.Next());
//     ...
//   }
// Ownership: non-owning; the input must outlive the reader and the payload views it returns.
class FrameReader {
 public:
  explicit FrameReader(std::string_view input, FrameReaderOptions options = {});
  explicit FrameReader(const char* input, FrameReaderOptions options = {})
      : FrameReader(std::string_view(input), options) {}
  // A temporary string would die while its frames are still being read.
  explicit FrameReader(std::string&&, FrameReaderOptions = {}) = delete;

  // True when the input is used up by whole frames: the clean end. False after an error.
  bool AtEnd() const { return status_.ok() && offset_ == input_.size(); }

  // The next frame. Once an error is returned every later call returns it again, since the frame
  // boundaries after a bad frame cannot be trusted. At the clean end: NotFound "end of input".
  Result<Frame> Next();

  // Start of the next frame to read; after an error, start of the bad frame. For a log file, the
  // length of the intact prefix.
  size_t offset() const { return offset_; }
  // True when the last error was that the input ended inside a frame (a torn tail), as opposed
  // to damaged bytes.
  bool truncated() const { return truncated_; }

 private:
  std::string_view input_;
  FrameReaderOptions options_;
  size_t offset_ = 0;
  Status status_;
  bool truncated_ = false;
};

// Reads frames from bytes that arrive in pieces, e.g. from a socket:
//   reader.Append(chunk);
//   while (true) {
//     SLUICE_ASSIGN_OR_RETURN(std::optional<Frame> f, reader.Next());
//     if (!f) break;  // Needs more bytes (at least BytesWanted()).
//     ...
//   }
//   at end of stream: SLUICE_RETURN_IF_ERROR(reader.Finish());
// Ownership: copies appended bytes into its own buffer. A returned payload view is valid until the
// next Append. Memory: holds at most the unread frames' bytes that the caller appended; an
// oversized frame is rejected from its header, before its payload is buffered, as long as the
// caller calls Next between Appends.
class FrameStreamReader {
 public:
  explicit FrameStreamReader(FrameReaderOptions options = {}) : options_(options) {}

  void Append(std::string_view bytes);

  // The next complete frame, or nullopt when more bytes are needed. Errors are sticky, as in
  // FrameReader; after one the stream cannot be resynchronised and should be closed.
  Result<std::optional<Frame>> Next();

  // How many more bytes Next needs before it can return a frame: 0 when one may be ready.
  size_t BytesWanted() const;

  // For the end of the stream: OK when it ended between frames; Corruption "frame"
  // ("truncated frame ...") when it ended inside one; the sticky error if there was one.
  Status Finish() const;

  // Bytes buffered and not yet returned as frames.
  size_t buffered() const { return buffer_.size() - consumed_; }

 private:
  FrameReaderOptions options_;
  std::string buffer_;
  size_t consumed_ = 0;      // Bytes at the front of buffer_ already returned as frames.
  size_t bytes_needed_ = 0;  // From the last incomplete scan, counted from consumed_.
  Status status_;
};

}  // namespace sluice::wire
