#include "localcluster/apiserver/user_info.h"

#include <algorithm>

namespace sluice::apiserver {

bool UserInfo::InGroup(std::string_view group) const {
  return std::find(groups.begin(), groups.end(), group) != groups.end();
}

std::string ServiceAccountUsername(std::string_view namespace_, std::string_view name) {
  std::string out = "system:serviceaccount:";
  out += namespace_;
  out += ':';
  out += name;
  return out;
}

UserInfo AdminUser() {
  UserInfo user;
  user.name = kAdminUser;
  user.groups = {kMastersGroup, kAuthenticatedGroup};
  return user;
}

UserInfo UnsecuredUser() {
  UserInfo user;
  user.name = kUnsecuredUser;
  user.groups = {kMastersGroup, kAuthenticatedGroup};
  return user;
}

}  // namespace sluice::apiserver
