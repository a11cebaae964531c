/* The numeric options of the example's programs, shared so that each takes them alike. */
#ifndef ARGS_H
#define ARGS_H

/* A numeric option `name` from argv, or def; out of [min, max] exits 2 with a message. */
long arg_long(int argc, char **argv, const char *name, long def, long min, long max);

#endif
