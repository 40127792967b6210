/* restore-netns: CRIU's action script on a replica's restore (restore.conf's `action-script`).
 *
 * A replica without a network has no network sandbox of Docker's (osgym/replicas/provision.py), so a clone is
 * restored into a new network namespace that nothing sets up: at a start runc brings up the loopback and writes
 * the container's sysctls, but `runc restore` does neither, and Docker's sandbox hook, which brought a clone's
 * loopback up, costs 0.12 s of every restore. At CRIU's `setup-namespaces` (the restored tasks exist, none runs
 * yet) this joins the namespace of the restored root task (CRTOOLS_INIT_PID), writes the sysctls runc-criu found
 * in the container's config (OSGYM_RESTORE_SYSCTLS: `name=value` pairs, net.* only) and brings `lo` up, in that
 * order, so that an IPv6-less loopback never has ::1. Every other action is a no-op. A failure fails the
 * restore (CRIU stops on a failed action script), and the pool starts the replica cold and says why.
 * Built by scripts/ensure-criu.sh; compiled, as ksm-exec is, because it runs on every restore. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(const char *what, const char *detail)
{
	fprintf(stderr, "restore-netns: %s: %s\n", what, detail);
	return 1;
}

/* net.ipv6.conf.all.disable_ipv6=1 -> /proc/sys/net/ipv6/conf/all/disable_ipv6 gets "1", in the joined namespace
 * (a net sysctl file answers for the namespace of the task that opens it) */
static int write_sysctl(char *pair)
{
	char *eq = strchr(pair, '=');
	if (!eq || strncmp(pair, "net.", 4) || eq == pair)
		return fail("not a net.* name=value sysctl", pair);
	*eq = '\0';
	const char *value = eq + 1;
	char path[256] = "/proc/sys/";
	size_t n = strlen(path);
	for (const char *c = pair; *c; c++) {
		if (!(*c == '.' || *c == '_' || *c == '-' || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')))
			return fail("a sysctl name outside [a-z0-9._-]", pair);
		if (c[0] == '.' && c[1] == '.')
			return fail("a sysctl name with an empty part", pair);
		if (n + 2 >= sizeof path)
			return fail("a sysctl name too long", pair);
		path[n++] = *c == '.' ? '/' : *c;
	}
	path[n] = '\0';
	for (const char *c = value; *c; c++)
		if (!((*c >= '0' && *c <= '9') || *c == '-' || *c == ' '))
			return fail("a sysctl value that is not a number", value);
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	ssize_t len = (ssize_t)strlen(value);
	if (write(fd, value, (size_t)len) != len) {
		perror(path);
		close(fd);
		return 1;
	}
	return close(fd) ? (perror(path), 1) : 0;
}

int main(void)
{
	const char *action = getenv("CRTOOLS_SCRIPT_ACTION");
	if (!action || strcmp(action, "setup-namespaces"))
		return 0;
	const char *pid = getenv("CRTOOLS_INIT_PID");
	if (!pid || !*pid || strspn(pid, "0123456789") != strlen(pid) || strlen(pid) > 10)
		return fail("CRTOOLS_INIT_PID is not a process id", pid ? pid : "(unset)");
	char path[64];
	snprintf(path, sizeof path, "/proc/%s/ns/net", pid);
	int ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0) {
		perror(path);
		return 1;
	}
	struct stat theirs, ours;
	if (fstat(ns, &theirs) || stat("/proc/self/ns/net", &ours)) {
		perror("stat of a network namespace");
		return 1;
	}
	/* restored into this (the host's) namespace: nothing of it is the clone's to set */
	if (theirs.st_ino == ours.st_ino && theirs.st_dev == ours.st_dev)
		return 0;
	if (setns(ns, CLONE_NEWNET)) {
		perror("setns");
		return 1;
	}
	close(ns);
	const char *sysctls = getenv("OSGYM_RESTORE_SYSCTLS");
	if (sysctls && *sysctls) {
		char *copy = strdup(sysctls), *save = NULL;
		if (!copy)
			return fail("strdup", "out of memory");
		for (char *pair = strtok_r(copy, "\n", &save); pair; pair = strtok_r(NULL, "\n", &save))
			if (write_sysctl(pair))
				return 1;
		free(copy);
	}
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		perror("socket");
		return 1;
	}
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr)) {
		perror("lo's flags");
		return 1;
	}
	if (!(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(s, SIOCSIFFLAGS, &ifr)) {
			perror("bringing lo up");
			return 1;
		}
	}
	return 0;
}
