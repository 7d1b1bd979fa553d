/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Replay driver for the libFuzzer targets.
 *
 * `make check` links each tests/fuzz/fuzz_*.c with this file (gcc, ASan,
 * UBSan) and feeds it every file under the given directories: the seed
 * corpus and the inputs that once crashed a parser.  A regression aborts
 * under the sanitizers; otherwise the driver prints how many inputs ran.
 *
 * Every path given must exist (a target's corpus/ and regression/
 * directories are committed, the latter with a .gitkeep while empty): a
 * misnamed or lost directory fails the replay instead of replaying
 * nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = -1;

    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 4096;
            uint8_t *nbuf = realloc(buf, ncap);
            if (!nbuf)
                goto done;
            buf = nbuf;
            cap = ncap;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    if (ferror(f))
        goto done;
    LLVMFuzzerTestOneInput(buf, len);
    rc = 0;
done:
    free(buf);
    fclose(f);
    return rc;
}

static int replay_path(const char *path, int *countp)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        /* A missing directory would make the replay pass vacuously. */
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (replay_file(path) < 0)
            return -1;
        (*countp)++;
        return 0;
    }
    DIR *dir = opendir(path);
    if (!dir)
        return -1;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(dir))) {
        if (de->d_name[0] == '.')
            continue;
        char sub[4096];
        snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
        if (replay_path(sub, countp) < 0)
            rc = -1;
    }
    closedir(dir);
    return rc;
}

int main(int argc, char **argv)
{
    int count = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++)
        if (replay_path(argv[i], &count) < 0)
            rc = 1;
    printf("replayed %d inputs\n", count);
    return rc;
}
