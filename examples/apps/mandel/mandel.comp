// A data-parallel loop: every row of a Mandelbrot image is computed by `escape`, a pure
// function of the row number and the view, so `--split K` may run it as K instances taking
// turns by row while `shade` (stateful) receives the rows in order.
//
//   intercore compile build mandel.comp --sources mandel.c -o mandel --split 2 --explain
//   ./mandel
type row = uint16_t[480];       // escape counts of one row
type view = double[4];          // left, top, step, iteration limit
const int ROWS = 320;

view frame(void);
row escape(int y, const view v);
stateful void shade(int y, const row r, int last);

int main() {
  view v = frame();
  for (int y = 0; y < ROWS; y++) {
    shade(y, escape(y, v), ROWS - 1);
  }
  return 0;
}
