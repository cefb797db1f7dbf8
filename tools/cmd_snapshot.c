/* txl snapshot info FILE: print a snapshot's header and verify it. */
#include "cmd.h"
#include "txl.h"

#include <stdio.h>
#include <string.h>

int
txl_cmd_snapshot(int argc, char **argv)
{
  if (argc != 3 || strcmp(argv[1], "info") != 0) {
    fprintf(stderr, "usage: txl snapshot info FILE\n"
                    "  prints the snapshot's header as JSON and verifies its "
                    "checksum and payload;\n  exit status 1 for a bad file\n");
    return 2;
  }
  g_autoptr(GError) err = NULL;
  g_autoptr(GString) out = g_string_new(NULL);
  if (!txl_snapshot_describe(argv[2], out, &err)) {
    fprintf(stderr, "txl snapshot: %s\n", err->message);
    return 1;
  }
  fputs(out->str, stdout);
  return 0;
}
