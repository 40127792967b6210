/* ksm-exec PROGRAM [ARG...]: run PROGRAM with KSM's merge-any flag set (PR_SET_MEMORY_MERGE, Linux 6.4).
 *
 * runc-criu runs `runc restore` through this, so that runc, CRIU and every task CRIU forks inherit the flag,
 * which CRIU does not restore (docs/design-notes.md, "Reset by restore: the route"). Built and installed by
 * scripts/ensure-criu.sh; a compiled helper rather than an interpreter's one-liner because it sits on every
 * restore's path (2.5 ms against 19 for python3). */
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#endif

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PROGRAM [ARG...]\n", argv[0]);
		return 2;
	}
	/* A kernel without it (before 6.4) refuses the call: the clone then runs unmerged, as the replica's own
	 * opt-in would there (replica_images/server/memory.py), and the restore goes on. */
	prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0);
	execv(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
