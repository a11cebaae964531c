# Cross-building the native tools for 64-bit Arm boards (Raspberry Pi 4/5, Jetson, Zynq
# UltraScale+) with Debian's cross toolchain:
#
#   apt-get install gcc-aarch64-linux-gnu qemu-user
#   cmake -S native -B build/arm64 -DCMAKE_TOOLCHAIN_FILE=native/cmake/aarch64-linux-gnu.cmake
#   cmake --build build/arm64 && (cd build/arm64 && ctest)
#
# ctest runs the unit tests through qemu-user (CMAKE_CROSSCOMPILING_EMULATOR); the board
# itself needs only build/arm64/bin. IC_CROSS_PREFIX picks another triplet's tools and
# IC_CROSS_SYSROOT another target root (e.g. a copy of the board's /).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(IC_CROSS_PREFIX "aarch64-linux-gnu-" CACHE STRING "prefix of the cross tools")
set(IC_CROSS_SYSROOT "/usr/aarch64-linux-gnu" CACHE PATH "the target's libraries and headers")

set(CMAKE_C_COMPILER "${IC_CROSS_PREFIX}gcc")
set(CMAKE_FIND_ROOT_PATH "${IC_CROSS_SYSROOT}")
# Programs run here (the build's own tools); libraries and headers come from the target.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)

# qemu-user finds the target's dynamic loader and libc under the sysroot.
find_program(IC_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(IC_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${IC_QEMU_AARCH64};-L;${IC_CROSS_SYSROOT}")
endif()
