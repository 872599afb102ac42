#include "common/status.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(StatusTest, OkCarriesNothing) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(HttpStatusFor(s.code()), 200);
}

TEST(StatusTest, ToStringNamesCodeFieldAndMessage) {
  Status s = Status::InvalidArgument("must be >= 0", "spec.replicas");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.ToString(), "InvalidArgument: spec.replicas: must be >= 0");
  EXPECT_EQ(s.WithContext("RolloutPool default/rp").message(),
            "RolloutPool default/rp: must be >= 0");
  EXPECT_EQ(s.WithContext("x").field(), "spec.replicas");
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
}

TEST(StatusTest, CodesMapToHttpAndKubernetesReasons) {
  struct Case {
    Status status;
    int http;
    std::string_view reason;
  };
  const Case cases[] = {
      {Status::InvalidArgument("x"), 400, "BadRequest"},
      {Status::Unauthenticated("x"), 401, "Unauthorized"},
      {Status::PermissionDenied("x"), 403, "Forbidden"},
      {Status::NotFound("x"), 404, "NotFound"},
      {Status::Conflict("x"), 409, "Conflict"},
      {Status::AlreadyExists("x"), 409, "AlreadyExists"},
      {Status::Gone("x"), 410, "Gone"},
      {Status::TooLarge("x"), 413, "RequestEntityTooLarge"},
      {Status::Unprocessable("x"), 422, "Invalid"},
      {Status::TooManyRequests("x"), 429, "TooManyRequests"},
      {Status::Internal("x"), 500, "InternalError"},
      {Status::Corruption("x"), 500, "InternalError"},
      {Status::Unavailable("x"), 503, "ServiceUnavailable"},
      {Status::DeadlineExceeded("x"), 504, "Timeout"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(HttpStatusFor(c.status.code()), c.http) << c.status.ToString();
    EXPECT_EQ(ReasonFor(c.status.code()), c.reason) << c.status.ToString();
    if (c.status.code() != StatusCode::kAlreadyExists &&
        c.status.code() != StatusCode::kCorruption) {
      EXPECT_EQ(StatusCodeForHttp(c.http), c.status.code()) << c.http;
    }
  }
  EXPECT_EQ(StatusCodeForHttp(204), StatusCode::kOk);
  EXPECT_EQ(StatusCodeForHttp(418), StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusCodeForHttp(507), StatusCode::kInternal);
}

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument("odd", "x");
  return x / 2;
}

Status Quarter(int x, int* out) {
  SLUICE_ASSIGN_OR_RETURN(int half, Half(x));
  SLUICE_ASSIGN_OR_RETURN(*out, Half(half));
  return Status::Ok();
}

TEST(StatusTest, ResultAndMacros) {
  Result<int> r = Half(8);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 4);
  EXPECT_TRUE(r.status().ok());
  int q = 0;
  EXPECT_TRUE(Quarter(8, &q).ok());
  EXPECT_EQ(q, 2);
  Status s = Quarter(6, &q);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "x");
}

TEST(StatusDeathTest, ValueOfErrorAborts) {
  Result<int> r = Half(3);
  EXPECT_DEATH((void)r.value(), "SLUICE_CHECK failed");
}

}  // namespace
}  // namespace sluice
