/* Every victim, once. A new victim is one C file exporting `ic_victim_<name>` plus one
 * line here; the driver expands the list into its table. */
#ifndef IC_VICTIMS_H
#define IC_VICTIMS_H

#define IC_VICTIMS(X) \
  X(matmul)           \
  X(ptrchase)         \
  X(stream)           \
  X(qsort)            \
  X(susan)

#endif
