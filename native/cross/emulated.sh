#!/bin/sh
# emulated.sh ARCH COMMAND [ARG...]: run COMMAND where ARCH binaries execute through
# qemu-user, as they would on a board of that architecture.
#
# COMMAND runs in a user and mount namespace of its own with a private binfmt_misc instance
# (Linux 6.7 or later) in which qemu-ARCH is registered, so every process it starts, and
# every process those start, runs ARCH binaries directly: ctest's tests that execute the
# tools, or an ssh session on an emulated "board". Nothing on the host changes: the
# registration ends with the namespace. The target's dynamic loader and libraries come from
# QEMU_LD_PREFIX (default: Debian's cross sysroot, /usr/ARCH-linux-gnu).
#
# Exit status: COMMAND's; 3 when this host cannot emulate (no qemu-user, a kernel without
# sandboxed binfmt_misc, no user namespaces), with the reason on stderr.
set -eu

usage() { echo "usage: $0 aarch64 COMMAND [ARG...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
ARCH=$1
shift
case $ARCH in
  # qemu's own registration (scripts/qemu-binfmt-conf.sh): an ELF64 little-endian
  # executable or shared object whose e_machine is 183 (EM_AARCH64).
  aarch64)
    MAGIC='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
    MASK='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
    ;;
  *) echo "$0: no emulation for $ARCH (known: aarch64)" >&2; exit 2 ;;
esac

unsupported() { echo "$0: cannot emulate $ARCH here: $*" >&2; exit 3; }

if [ "${IC_EMULATED_INSIDE:-}" != "$ARCH" ]; then
  QEMU=$(command -v "qemu-$ARCH" || command -v "qemu-$ARCH-static" || true)
  [ -n "$QEMU" ] || unsupported "qemu-$ARCH is not installed (apt-get install qemu-user)"
  export IC_EMULATED_INSIDE="$ARCH" IC_EMULATED_QEMU="$QEMU"
  export QEMU_LD_PREFIX="${QEMU_LD_PREFIX:-/usr/$ARCH-linux-gnu}"
  # Without --fork the namespace is entered in place: COMMAND keeps this process's pid,
  # session and process group (an ssh session's leader stays its leader).
  exec unshare --user --map-root-user --mount --propagation private -- "$0" "$ARCH" "$@"
fi

# Inside the namespace: a binfmt_misc of our own, holding only qemu-ARCH. The F flag opens
# the interpreter now, so it is found whatever the processes' root or mounts later.
mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null ||
  unsupported "this kernel gives no private binfmt_misc to a user namespace (Linux >= 6.7)"
# The kernel decodes the \xHH escapes itself.
printf ':qemu-%s:M::%s:%s:%s:F' "$ARCH" "$MAGIC" "$MASK" "$IC_EMULATED_QEMU" \
  >/proc/sys/fs/binfmt_misc/register
unset IC_EMULATED_INSIDE IC_EMULATED_QEMU
exec "$@"
