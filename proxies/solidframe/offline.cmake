# proxies/solidframe/offline.cmake - lets SolidFrame's CMake configure with
# no network (passed as -DCMAKE_PROJECT_INCLUDE by build.sh).
#
# SolidFrame's top-level CMakeLists.txt downloads cxxopts (from a branch,
# not a release), snappy and OpenSSL as ExternalProjects at configure time.
# This file runs right after its project() call and turns that off:
# NO_EXTERNAL skips the downloads (and says OpenSSL is there), the three
# build-* targets the examples depend on become empty targets, and
# OpenSSL and cxxopts come from the system (Debian: libssl-dev,
# libcxxopts-dev, whose cxxopts.hpp is in /usr/include).

set(NO_EXTERNAL TRUE)
find_package(OpenSSL REQUIRED)
find_path(STACKMETER_CXXOPTS_DIR cxxopts.hpp)
if(NOT STACKMETER_CXXOPTS_DIR)
    message(FATAL_ERROR "cxxopts.hpp not found (Debian: apt-get install libcxxopts-dev)")
endif()
include_directories(${STACKMETER_CXXOPTS_DIR})
foreach(download build-cxxopts build-snappy build-openssl)
    add_custom_target(${download})
endforeach()
