# Third-party dependencies, all from Debian packages (scripts/install-deps.sh installs them).
find_package(PkgConfig REQUIRED)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(Threads REQUIRED)
find_package(GTest REQUIRED)

# Debian's yaml-cpp config exports `yaml-cpp` (older) or `yaml-cpp::yaml-cpp` (newer).
if(TARGET yaml-cpp::yaml-cpp)
  set(SLUICE_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(SLUICE_YAML_TARGET yaml-cpp)
endif()

find_program(SLUICE_PROMTOOL promtool)
