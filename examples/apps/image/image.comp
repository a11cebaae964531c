// An image pipeline on the SUSAN victim's kernels (native/victims/susan_kernels.h):
// synthesize a frame, smooth it, compute the USAN corner response, count the corners, and
// report them with the frame's mean brightness.
//
//   intercore compile build image.comp --sources image.c -o image --explain
type image = uint8_t[65536];       // 256 x 256 grey levels
type response = uint32_t[65536];
const int FRAMES = 24;

image synthesize(int i);
image smooth(const image in);
response usan(const image in);
long corners(const response r);
long brightness(const image in);
stateful void report(int i, long n, long b, int last);

int main() {
  for (int i = 0; i < FRAMES; i++) {
    image s = smooth(synthesize(i));
    report(i, corners(usan(s)), brightness(s), FRAMES - 1);
  }
  return 0;
}
