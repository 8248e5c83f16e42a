/* cli.h -- the bfeed subcommands; each takes the arguments after its name
 * and returns the process exit status (0 ok, 1 failure, 2 usage error). */
#ifndef BFEED_CLI_H
#define BFEED_CLI_H

int cmd_bench(int argc, char **argv);
int cmd_fetch(int argc, char **argv);
int cmd_preview(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_top(int argc, char **argv);

#endif
