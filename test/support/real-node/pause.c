/*
 * The real node's pause image (test/support/real-node/images.ts): the process that holds a pod sandbox's
 * namespaces. Built here because the test bed pulls nothing; it does what a pause container does and no more:
 * sleeps, reaps children that land on it, and exits 0 on SIGINT or SIGTERM.
 */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {0};
  stop.sa_handler = quit;
  sigaction(SIGINT, &stop, NULL);
  sigaction(SIGTERM, &stop, NULL);
  struct sigaction child = {0};
  child.sa_handler = reap;
  child.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  sigaction(SIGCHLD, &child, NULL);
  for (;;) pause();
}
