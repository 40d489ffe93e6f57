/* SPDX-License-Identifier: MPL-2.0 */
/* replay.c -- runs a libFuzzer target without libFuzzer: links with one
 * fuzz/fuzz_*.c (any C compiler) and feeds it every file named on the
 * command line (a directory = every regular file in it, sorted), the way
 * `make check` replays the seed corpora.
 *
 * Output: one line per input that passed ("ok NAME"); on the last line
 * "replay: P passed, F failed".  An input the target does not survive
 * (__builtin_trap, a sanitizer abort) ends the process: the line
 * "replay: running NAME" printed before each input names the culprit, and
 * the caller counts the missing summary as a failure. */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t passed, failed;

/* Reads path whole into a malloc()ed buffer (size + 1, NUL-terminated so a
 * target that wrongly reads one past the end is caught by ASan only when it
 * reads further: libFuzzer gives no terminator either). */
static int slurp(const char *path, uint8_t **out, size_t *len)
{
    int rc = -1;
    uint8_t *buf = NULL;
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0 || st.st_size < 0)
        goto done;
    buf = malloc((size_t)st.st_size ? (size_t)st.st_size : 1);
    if (!buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
        goto done;
    *out = buf;
    *len = (size_t)st.st_size;
    buf = NULL;
    rc = 0;
done:
    free(buf);
    if (f)
        fclose(f);
    return rc;
}

static void run_file(const char *path)
{
    uint8_t *data = NULL;
    size_t len = 0;
    if (slurp(path, &data, &len) != 0) {
        printf("FAIL %s: unreadable\n", path);
        failed++;
        return;
    }
    printf("replay: running %s\n", path);
    fflush(stdout);
    /* libFuzzer hands over an exact-size copy: so do we */
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) {
        free(data);
        failed++;
        return;
    }
    memcpy(copy, data, len);
    free(data);
    LLVMFuzzerTestOneInput(copy, len);
    free(copy);
    printf("ok %s\n", path);
    passed++;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    if (!d) {
        printf("FAIL %s: cannot open\n", dir);
        failed++;
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *names);
            if (!nn)
                break;
            names = nn;
        }
        size_t l = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(l);
        if (!names[n])
            break;
        snprintf(names[n], l, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            run_file(names[i]);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            run_dir(argv[i]);
        else
            run_file(argv[i]);
    }
    printf("replay: %zu passed, %zu failed\n", passed, failed);
    return failed ? 1 : 0;
}
