/* The control law shared by the example's two programs: `control` (a plain program that
 * `intercore measure run` times) and `control_task` (the same steps as a periodic task built
 * with ic_task.h). Every step filters a sensor sample (FIR), looks the filtered value up in a
 * calibration map (bilinear interpolation over a table) and closes a PID loop on the result,
 * marking the three stages with ic_user.h's regions. */
#ifndef CONTROLLER_H
#define CONTROLLER_H

enum { TAPS = 64 };

typedef struct {
  double kp, ki, kd, integral, last_error;
} pid_state;

typedef struct {
  double coeff[TAPS], history[TAPS];
  double *map;
  int rows;
  pid_state pid;
  unsigned seed;
  double plant, load, u;
  long step;
} controller;

/* Declares the regions and allocates a rows x rows map; false (with a message) when it
 * cannot be allocated. */
int controller_init(controller *c, int rows);
void controller_step(controller *c);
void controller_free(controller *c);

#endif
