/*
 * The real node's test image (test/support/real-node/images.ts): prints who it runs as and its message, writes
 * the message and its uid to the termination message file, then exits 0.
 *
 *   hello [MESSAGE]     stdout: "uid=U gid=G", then MESSAGE (default "hello");
 *                       /dev/termination-log (or $TERMINATION_LOG): "MESSAGE uid=U"
 *   $HELLO_SLEEP=N      then sleeps N seconds before exiting (a pod that stays up for exec and port-forward)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* As PID 1 of its container it would ignore SIGTERM without a handler. */
static void quit(int sig) {
  (void)sig;
  _exit(0);
}

int main(int argc, char **argv) {
  signal(SIGTERM, quit);
  const char *message = argc > 1 ? argv[1] : "hello";
  const char *path = getenv("TERMINATION_LOG");
  if (path == NULL || *path == '\0') path = "/dev/termination-log";
  printf("uid=%u gid=%u\n%s\n", (unsigned)getuid(), (unsigned)getgid(), message);
  fflush(stdout);
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    perror(path);
    return 1;
  }
  fprintf(f, "%s uid=%u", message, (unsigned)getuid());
  if (fclose(f) != 0) return 1;
  const char *nap = getenv("HELLO_SLEEP");
  if (nap != NULL) sleep((unsigned)atoi(nap));
  return 0;
}
