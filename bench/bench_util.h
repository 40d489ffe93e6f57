/* SPDX-License-Identifier: MPL-2.0 */
/* bench_util.h -- helpers shared by picl-bench sync and profile: a storage
 * server in a child process, Hawk credentials for it, per-phase peak memory,
 * one engine run, temporary directories. */
#ifndef PICL_BENCH_UTIL_H
#define PICL_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "picl.h"
#include "client/state.h"
#include "client/storage_client.h"
#include "stores/store.h"

/*
 * The storage server runs in a child process (this program re-executed as
 * `picl-bench sync --serve DIR MAX_TOTAL_RECORDS`), so that the client's peak
 * memory is the client's alone and the server's can be read separately from
 * /proc/PID/status.  It listens on 127.0.0.1, port 0 (read back through a
 * pipe), and stops when the parent closes its stdin (bu_server_stop), or
 * when the parent dies.
 */
typedef struct bu_server {
    pid_t pid;
    int to_child; /* write end of the child's stdin */
    unsigned port;
    char dir[64];   /* the server's data directory (removed by stop) */
    char node[128]; /* "http://127.0.0.1:PORT" */
    int64_t max_total_records;
} bu_server;

/* Starts the server (max_total_records 0 = the server's default).  Does not
 * need NSS.  Returns 0, or -1 with a message on stderr. */
int bu_server_start(bu_server *s, int64_t max_total_records);
/* Stops the child, waits for it, removes its data directory. */
void bu_server_stop(bu_server *s);
/* The body of the child: `--serve DIR MAX` (argv after "--serve"). */
int bu_server_main(int argc, char **argv);

/* Under `picl-bench all` an earlier benchmark may have NSS up without our key
 * database (SDR needs one as the internal slot): then the benchmark re-runs
 * itself as `picl-bench NAME ARGS...` in a fresh process and returns its exit
 * status.  bu_nss_is_up() says whether that is needed. */
int bu_nss_is_up(void);
int bu_rerun_fresh(const char *name, int argc, char **argv);

/* Credentials for user uid on s (needs NSS).  *token and *key are malloc()ed;
 * the caller frees them (key with picl__zfree).  PICL_OK or the mint error. */
picl_status bu_mint(const bu_server *s, int64_t uid, char **token, char **key);

/* A storage client for uid on s (needs NSS); caller picl__stc_free()s. */
picl_status bu_client(const bu_server *s, int64_t uid, picl_stc **out);

/* A state in a fresh temporary directory with kA and kB set directly (no
 * keyserver); caller picl__state_free()s and removes dir. */
picl_status bu_state(char dir[64], picl_state **out, const uint8_t ka[32], const uint8_t kb[32]);

/* Memory in kB from /proc/PID/status (pid 0 = this process): "VmRSS" or
 * "VmHWM"; -1 when unreadable. */
long bu_mem_kb(pid_t pid, const char *field);
/* Resets VmHWM of pid (0 = self) to its current RSS (/proc/PID/clear_refs
 * "5"); returns 0, or -1 when the kernel does not allow it. */
int bu_peak_reset(pid_t pid);

/* One measured phase. */
typedef struct bu_phase {
    const char *name;
    size_t records; /* records moved (uploaded + downloaded) */
    double secs;
    long rss_before_kb, peak_kb;         /* client */
    long srv_rss_before_kb, srv_peak_kb; /* server (-1 unknown) */
    uint64_t requests;
    double cpu_s, srv_cpu_s; /* user + system CPU (-1 unknown) */
} bu_phase;

/* Starts a phase: resets peaks, notes RSS and the request count of stc
 * (may be NULL). */
void bu_phase_begin(bu_phase *p, const char *name, const bu_server *s, const picl_stc *stc);
/* Ends it: time, peaks, requests. */
void bu_phase_end(bu_phase *p, const bu_server *s, const picl_stc *stc);
/* Prints one line (header once with print_header). */
void bu_phase_print(const bu_phase *p, int print_header);

/*
 * One engine run over stores (borrowed).  On success *moved (may be NULL) is
 * the sum of "uploaded" + "applied" over the summary, *failed the sum of
 * "failed".  On failure err receives the engine's message.
 */
picl_status bu_sync(picl_stc *stc, picl_state *st, picl_store *const *stores, size_t n, size_t *moved,
                    size_t *failed, char *err, size_t errlen);

/*
 * A store that forwards every operation to inner and adds up the wall time
 * spent in it (what the profile's database costs, apart from the engine's
 * crypto, HTTP and the server).  *out owns inner: closing it closes inner.
 * On failure inner is left open and *out is NULL.
 */
picl_status bu_timed_store(picl_store *inner, picl_store **out);
/* Seconds spent in the wrapped store so far (0 for another store). */
double bu_timed_secs(const picl_store *s);
/* Resets that sum. */
void bu_timed_reset(picl_store *s);

/* mkdtemp of "/tmp/picl-bench-<tag>-XXXXXX" into buf (64 bytes); 0 or -1. */
int bu_tmpdir(char buf[64], const char *tag);
/* rm -rf of a directory made by bu_tmpdir (refuses anything else). */
void bu_rmtree(const char *dir);

/*
 * Deterministic cleartext records (records.md section 3), new arrays the
 * caller json_decref()s (NULL when out of memory):
 *  bookmarks: n records: with_menu adds the "menu" root record (children =
 *    the folders); about n/100 folders under menu, each holding up to 99
 *    bookmarks (children in order); one bookmark in 20 has a tag, one in 200
 *    a keyword.
 *  history: pages with 1..7 visits each (newest first, microseconds, types
 *    1/2/5), until max_pages pages or max_visits visits, whichever first.
 */
json_t *bu_gen_bookmarks(size_t n, int with_menu);
json_t *bu_gen_history(size_t max_pages, size_t max_visits, size_t *visits);

/* The 10x smaller sizes of --quick: 1 when argv has "--quick". */
int bu_has_flag(int argc, char **argv, const char *flag);

#endif
