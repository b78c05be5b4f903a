/*
 * The real node's test image (test/support/real-node/images.ts): prints who it runs as and its message, writes
 * the message and its uid to the termination message file, then exits 0; or serves a line on a TCP port.
 *
 *   hello [MESSAGE]          stdout: "uid=U gid=G", then MESSAGE (default "hello");
 *                            /dev/termination-log (or $TERMINATION_LOG): "MESSAGE uid=U"
 *   hello --serve PORT       prints "uid=U gid=G" and "serving on PORT", then answers every TCP connection on
 *                            PORT (all addresses) with "hello from uid=U" and a newline, until SIGTERM
 */
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* As PID 1 of its container it would ignore SIGTERM without a handler. */
static void quit(int sig) {
  (void)sig;
  _exit(0);
}

static int serve(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) {
    perror("socket");
    return 1;
  }
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons((unsigned short)port);
  if (bind(s, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(s, 16) != 0) {
    perror("bind");
    return 1;
  }
  printf("serving on %d\n", port);
  fflush(stdout);
  char line[64];
  int n = snprintf(line, sizeof line, "hello from uid=%u\n", (unsigned)getuid());
  for (;;) {
    int c = accept(s, NULL, NULL);
    if (c < 0) continue;
    if (write(c, line, (size_t)n) != n) perror("write");
    close(c);
  }
}

int main(int argc, char **argv) {
  signal(SIGTERM, quit);
  printf("uid=%u gid=%u\n", (unsigned)getuid(), (unsigned)getgid());
  if (argc > 2 && strcmp(argv[1], "--serve") == 0) return serve(atoi(argv[2]));
  const char *message = argc > 1 ? argv[1] : "hello";
  const char *path = getenv("TERMINATION_LOG");
  if (path == NULL || *path == '\0') path = "/dev/termination-log";
  printf("%s\n", message);
  fflush(stdout);
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    perror(path);
    return 1;
  }
  fprintf(f, "%s uid=%u", message, (unsigned)getuid());
  return fclose(f) == 0 ? 0 : 1;
}
