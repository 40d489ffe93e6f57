/* bench_storage.c -- picl-bench storage: the storage server under wrk on
 * loopback (2 connections), against nginx serving a static file of the same
 * size as each response (the ceiling). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "bench.h"
#include "crypto/nss.h"
#include "crypto/util.h"
#include "protocol/hawk.h"
#include "protocol/tokenlib.h"
#include "storage/storage.h"

#define UID 1
#define NONCE_LEN 12
#define REC_LEN (NONCE_LEN + PICL_HAWK_B64_BYTES)

static const uint8_t SECRET[] = "picl-bench-secret-0123456789abcdef-0123456789";

typedef struct scenario {
    const char *name;
    const char *method;
    const char *path;      /* below /1.5/UID */
    char *body;            /* request body or NULL */
    size_t count;          /* precomputed Hawk headers */
    int duration_s;
} scenario;

typedef struct wrk_result {
    double rps, p50_ms, p99_ms;
    long non2xx, requests;
} wrk_result;

static char dir[64];
static char *token, *key;
static unsigned port;

static int run_cmd_out(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    return pclose(p);
}

/* "1.23ms" / "456.00us" / "1.01s" -> milliseconds */
static double to_ms(const char *v)
{
    char *end;
    double x = strtod(v, &end);
    if (!strncmp(end, "us", 2))
        return x / 1000.0;
    if (!strncmp(end, "ms", 2))
        return x;
    if (*end == 's')
        return x * 1000.0;
    if (!strncmp(end, "m", 1))
        return x * 60000.0;
    return x;
}

static int parse_wrk(const char *out, wrk_result *r)
{
    memset(r, 0, sizeof *r);
    const char *p = strstr(out, "Requests/sec:");
    if (!p)
        return -1;
    r->rps = strtod(p + 13, NULL);
    const char *d = strstr(out, "Latency Distribution");
    if (d) {
        const char *l50 = strstr(d, "50%"), *l99 = strstr(d, "99%");
        if (l50)
            r->p50_ms = to_ms(l50 + 3 + strspn(l50 + 3, " \t"));
        if (l99)
            r->p99_ms = to_ms(l99 + 3 + strspn(l99 + 3, " \t"));
    }
    const char *nx = strstr(out, "Non-2xx or 3xx responses:");
    if (nx)
        r->non2xx = strtol(nx + 25, NULL, 10);
    const char *rq = strstr(out, "requests in");
    if (rq) {
        const char *s = rq;
        while (s > out && s[-1] != '\n')
            s--;
        r->requests = strtol(s, NULL, 10);
    }
    return 0;
}

/* Writes the nonce/MAC records and the Lua script of a scenario. */
static int write_script(const scenario *sc, const char *lua, int64_t ts)
{
    char datafile[128], bodyfile[128], target[256];
    snprintf(datafile, sizeof datafile, "%s/%s.hawk", dir, sc->name);
    snprintf(bodyfile, sizeof bodyfile, "%s/%s.body", dir, sc->name);
    snprintf(target, sizeof target, "/1.5/%d%s", UID, sc->path);
    FILE *f = fopen(datafile, "w");
    if (!f)
        return -1;
    char tstext[32];
    snprintf(tstext, sizeof tstext, "%" PRId64, ts);
    picl_hawk_request hr = {.method = sc->method, .resource = target, .host = "127.0.0.1",
                            .port = port};
    for (size_t i = 0; i < sc->count; i++) {
        char nonce[NONCE_LEN + 1], mac[PICL_HAWK_B64_BYTES + 1];
        snprintf(nonce, sizeof nonce, "%c%011u", sc->name[0], (unsigned)(i % 1000000000u));
        if (picl__hawk_mac(mac, key, strlen(key), tstext, nonce, &hr, NULL, NULL) != PICL_OK) {
            fclose(f);
            return -1;
        }
        fwrite(nonce, 1, NONCE_LEN, f);
        fwrite(mac, 1, PICL_HAWK_B64_BYTES, f);
    }
    fclose(f);
    if (sc->body) {
        f = fopen(bodyfile, "w");
        if (!f)
            return -1;
        fwrite(sc->body, 1, strlen(sc->body), f);
        fclose(f);
    }
    f = fopen(lua, "w");
    if (!f)
        return -1;
    fprintf(f,
            "local f = io.open(\"%s\", \"rb\")\n"
            "local data = f:read(\"*a\")\n"
            "f:close()\n"
            "local n = #data / %d\n"
            "local i = 0\n"
            "local prefix = 'Hawk id=\"%s\", ts=\"%s\", nonce=\"'\n"
            "wrk.method = \"%s\"\n"
            "wrk.path = \"%s\"\n",
            datafile, REC_LEN, token, tstext, sc->method, target);
    if (sc->body)
        fprintf(f,
                "local b = io.open(\"%s\", \"rb\")\n"
                "wrk.body = b:read(\"*a\")\n"
                "b:close()\n"
                "wrk.headers[\"Content-Type\"] = \"application/json\"\n",
                bodyfile);
    fprintf(f,
            "request = function()\n"
            "  local off = (i %% n) * %d\n"
            "  i = i + 1\n"
            "  wrk.headers[\"Authorization\"] = prefix .. data:sub(off + 1, off + %d) ..\n"
            "    '\", mac=\"' .. data:sub(off + %d, off + %d) .. '\"'\n"
            "  return wrk.format()\n"
            "end\n",
            REC_LEN, NONCE_LEN, NONCE_LEN + 1, REC_LEN);
    fclose(f);
    return 0;
}

static int run_wrk(const char *url, const char *lua, int duration, wrk_result *r)
{
    char cmd[1024], out[8192];
    snprintf(cmd, sizeof cmd, "wrk -t1 -c2 -d%ds --latency %s%s %s 2>&1", duration,
             lua ? "-s " : "", lua ? lua : "", url);
    run_cmd_out(cmd, out, sizeof out);
    if (parse_wrk(out, r) != 0) {
        fprintf(stderr, "storage: wrk failed:\n%s\n", out);
        return -1;
    }
    return 0;
}

/* One signed request through libcurl, to learn the response size (and
 * to load data). Returns the body length, or -1. */
static long signed_request(const char *method, const char *path, const char *body)
{
    char target[256], url[320];
    snprintf(target, sizeof target, "/1.5/%d%s", UID, path);
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, target);
    picl_hawk_request hr = {.method = method, .resource = target, .host = "127.0.0.1",
                            .port = port};
    char *hdr = NULL;
    if (picl__hawk_client_header(&hdr, token, key, strlen(key), &hr, (int64_t)time(NULL), NULL,
                                 NULL) != PICL_OK)
        return -1;
    char auth[4096];
    snprintf(auth, sizeof auth, "Authorization: %s", hdr);
    free(hdr);
    CURL *h = curl_easy_init();
    struct curl_slist *hl = curl_slist_append(NULL, auth);
    hl = curl_slist_append(hl, "Content-Type: application/json");
    FILE *sink = fopen("/dev/null", "w");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, sink);
    if (body)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    long status = 0;
    curl_off_t size = -1;
    if (curl_easy_perform(h) == CURLE_OK) {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(h, CURLINFO_SIZE_DOWNLOAD_T, &size);
    }
    fclose(sink);
    curl_slist_free_all(hl);
    curl_easy_cleanup(h);
    return status == 200 ? (long)size : -1;
}

static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof sa;
    unsigned p = 0;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &l) == 0)
        p = ntohs(sa.sin_port);
    close(fd);
    return p;
}

static pid_t start_nginx(unsigned nport)
{
    char conf[128], cmd[256];
    snprintf(conf, sizeof conf, "%s/nginx.conf", dir);
    FILE *f = fopen(conf, "w");
    if (!f)
        return -1;
    fprintf(f,
            "daemon off;\nworker_processes 2;\nuser root;\npid %s/nginx.pid;\n"
            "error_log %s/nginx.err;\nevents { worker_connections 64; }\n"
            "http { access_log off; sendfile on; keepalive_requests 1000000;\n"
            "  client_body_temp_path %s; proxy_temp_path %s; fastcgi_temp_path %s;\n"
            "  uwsgi_temp_path %s; scgi_temp_path %s;\n"
            "  server { listen 127.0.0.1:%u; root %s/www; default_type application/json; } }\n",
            dir, dir, dir, dir, dir, dir, dir, nport, dir);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s/www", dir);
    mkdir(cmd, 0755);
    pid_t pid = fork();
    if (pid == 0) {
        execlp("nginx", "nginx", "-p", dir, "-c", conf, (char *)NULL);
        _exit(127);
    }
    struct timespec ts = {0, 300000000};
    nanosleep(&ts, NULL);
    return pid;
}

static int write_static(const char *name, long size)
{
    char p[160];
    snprintf(p, sizeof p, "%s/www/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f)
        return -1;
    for (long i = 0; i < size; i++)
        fputc('x', f);
    fclose(f);
    return 0;
}

static char *records_body(int n, int first, size_t payload)
{
    size_t cap = (size_t)n * (payload + 64) + 8;
    char *b = malloc(cap);
    if (!b)
        return NULL;
    size_t o = (size_t)snprintf(b, cap, "[");
    for (int i = 0; i < n; i++) {
        o += (size_t)snprintf(b + o, cap - o, "%s{\"id\":\"rec%06d\",\"payload\":\"", i ? "," : "",
                              first + i);
        memset(b + o, 'p', payload);
        o += payload;
        o += (size_t)snprintf(b + o, cap - o, "\"}");
    }
    snprintf(b + o, cap - o, "]");
    return b;
}

static void rmtree(const char *d)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    if (system(cmd) != 0)
        fprintf(stderr, "storage: could not remove %s\n", d);
}

int bench_storage(int argc, char **argv)
{
    if (system("command -v wrk >/dev/null && command -v nginx >/dev/null") != 0) {
        printf("storage: needs wrk and nginx (Debian packages wrk, nginx)\n");
        return 1;
    }
    int rc = 1;
    storage_server *srv = NULL;
    pid_t ngx = -1;
    snprintf(dir, sizeof dir, "/tmp/picl-bench-storage-XXXXXX");
    if (!mkdtemp(dir) || picl__nss_acquire() != PICL_OK)
        return 1;
    chmod(dir, 0755);
    storage_config cfg = {.listen = "127.0.0.1:0", .data_dir = dir, .secret = SECRET,
                          .secret_len = sizeof SECRET - 1, .prune_interval_s = -1};
    if (storage_server_new(&srv, &cfg) != PICL_OK || storage_server_start(srv) != PICL_OK) {
        fprintf(stderr, "storage: cannot start the server\n");
        goto done;
    }
    port = storage_server_port(srv);
    picl_tokenlib_payload p;
    memset(&p, 0, sizeof p);
    p.uid = UID;
    snprintf(p.node, sizeof p.node, "http://127.0.0.1:%u", port);
    p.expires = (int64_t)time(NULL) + 3600;
    snprintf(p.fxa_uid, sizeof p.fxa_uid, "bench");
    snprintf(p.fxa_kid, sizeof p.fxa_kid, "bench");
    snprintf(p.hashed_fxa_uid, sizeof p.hashed_fxa_uid, "bench");
    snprintf(p.hashed_device_id, sizeof p.hashed_device_id, "bench");
    if (picl__tokenlib_mint(&token, &key, SECRET, sizeof SECRET - 1, &p) != PICL_OK)
        goto done;

    /* 1000 records of 1 KiB to read back */
    for (int i = 0; i < 10; i++) {
        char *b = records_body(100, i * 100, 1024);
        long ok = b ? signed_request("POST", "/storage/big", b) : -1;
        free(b);
        if (ok < 0) {
            fprintf(stderr, "storage: loading data failed\n");
            goto done;
        }
    }
    scenario sc[] = {
        {"info", "GET", "/info/collections", NULL, 120000, 3},
        {"post", "POST", "/storage/posted", records_body(100, 0, 1024), 30000, 3},
        {"get1000", "GET", "/storage/big?full=1", NULL, 30000, 3},
    };
    unsigned nport = free_port();
    ngx = start_nginx(nport);
    if (ngx <= 0)
        goto done;
    printf("storage: wrk -t1 -c2 on loopback; ceiling = nginx serving a static file of the "
           "response's size\n");
    printf("  %-28s %10s %9s %9s | %10s %9s %9s | %6s\n", "request", "req/s", "p50 ms", "p99 ms",
           "nginx r/s", "p50 ms", "p99 ms", "ratio");
    rc = 0;
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
        long size = signed_request(sc[i].method, sc[i].path, sc[i].body);
        char lua[128], url[160];
        snprintf(lua, sizeof lua, "%s/%s.lua", dir, sc[i].name);
        if (size < 0 || write_script(&sc[i], lua, (int64_t)time(NULL)) != 0 ||
            write_static(sc[i].name, size) != 0) {
            fprintf(stderr, "storage: %s: setup failed\n", sc[i].name);
            rc = 1;
            continue;
        }
        wrk_result ours, ceil;
        snprintf(url, sizeof url, "http://127.0.0.1:%u", port);
        int a = run_wrk(url, lua, sc[i].duration_s, &ours);
        snprintf(url, sizeof url, "http://127.0.0.1:%u/%s", nport, sc[i].name);
        int b = run_wrk(url, NULL, sc[i].duration_s, &ceil);
        if (a || b) {
            rc = 1;
            continue;
        }
        char label[64];
        snprintf(label, sizeof label, "%s %s (%ld B)", sc[i].method,
                 i == 0 ? "/info/collections" : i == 1 ? "100 x 1 KiB" : "1000 full", size);
        printf("  %-28s %10.0f %9.3f %9.3f | %10.0f %9.3f %9.3f | %6.3f\n", label, ours.rps,
               ours.p50_ms, ours.p99_ms, ceil.rps, ceil.p50_ms, ceil.p99_ms,
               ceil.rps > 0 ? ours.rps / ceil.rps : 0);
        if (ours.non2xx) {
            printf("  !! %ld of %ld requests were not 2xx (nonce pool of %zu exhausted?)\n",
                   ours.non2xx, ours.requests, sc[i].count);
            rc = 1;
        }
    }
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++)
        free(sc[i].body);
done:
    if (ngx > 0) {
        kill(ngx, SIGTERM);
        waitpid(ngx, NULL, 0);
    }
    storage_server_free(srv);
    free(token);
    if (key)
        picl__zfree(key, strlen(key));
    picl__nss_release();
    rmtree(dir);
    return rc;
}
