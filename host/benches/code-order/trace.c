/*
 * Which pages of its own code a program runs: preloaded into `stud` by
 * the startup bench (`STUD_BENCH_CODE_ORDER`), it takes every permission
 * from the executable's code mapping, and the first touch of each page
 * faults once: the handler notes the page and gives it back. At exit
 * the noted pages (file offsets, hex, one a line) go to
 * `$STUD_TRACE_OUT.<pid>`.
 *
 * The program installs its own SIGSEGV handler (wasmtime's traps): the
 * `sigaction` below keeps this one first and calls the program's for
 * every fault that is not a first touch, so traps work as before.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static unsigned long lo, hi, offset;
static unsigned char *seen;
static struct sigaction program;
static int program_set;

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static sigaction_fn real_sigaction;

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    if (!real_sigaction) real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    if (sig != SIGSEGV || !seen) return real_sigaction(sig, act, old);
    if (old) {
        if (program_set) *old = program;
        else { memset(old, 0, sizeof *old); old->sa_handler = SIG_DFL; }
    }
    if (act) { program = *act; program_set = 1; }
    return 0;
}

static void on_fault(int sig, siginfo_t *info, void *context) {
    unsigned long at = (unsigned long)info->si_addr;
    if (at >= lo && at < hi) {
        unsigned long page = (at - lo) >> 12;
        seen[page] = 1;
        mprotect((void *)(lo + (page << 12)), 4096, PROT_READ | PROT_EXEC);
        return;
    }
    if (program_set && (program.sa_flags & SA_SIGINFO)) { program.sa_sigaction(sig, info, context); return; }
    if (program_set && program.sa_handler != SIG_DFL && program.sa_handler != SIG_IGN) { program.sa_handler(sig); return; }
    struct sigaction dfl; memset(&dfl, 0, sizeof dfl); dfl.sa_handler = SIG_DFL;
    real_sigaction(SIGSEGV, &dfl, 0);
}

static void write_pages(void) {
    const char *out = getenv("STUD_TRACE_OUT");
    if (!out || !seen) return;
    char path[PATH_MAX]; snprintf(path, sizeof path, "%s.%d", out, getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return;
    char line[32];
    for (unsigned long page = 0; page < ((hi - lo) >> 12); page++)
        if (seen[page]) { int n = snprintf(line, sizeof line, "%lx\n", offset + (page << 12)); if (write(fd, line, n) != n) break; }
    close(fd);
}

__attribute__((constructor)) static void start(void) {
    char exe[PATH_MAX]; ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || !getenv("STUD_TRACE_OUT")) return;
    exe[n] = 0;
    FILE *maps = fopen("/proc/self/maps", "r"); if (!maps) return;
    char line[PATH_MAX + 128];
    while (fgets(line, sizeof line, maps)) {
        unsigned long a, b, off; char perms[8]; char path[PATH_MAX] = "";
        if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &a, &b, perms, &off, path) == 5
            && perms[2] == 'x' && strcmp(path, exe) == 0) { lo = a; hi = b; offset = off; }
    }
    fclose(maps);
    if (!lo) return;
    real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    seen = mmap(0, (hi - lo) >> 12, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (seen == MAP_FAILED) { seen = 0; return; }
    struct sigaction mine; memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = on_fault; mine.sa_flags = SA_SIGINFO | SA_NODEFER;
    real_sigaction(SIGSEGV, &mine, 0);
    atexit(write_pages);
    mprotect((void *)lo, hi - lo, PROT_NONE);
}
