/* remote_site.c -- a bucket's endpoint, region and keys (see remote_site.h). */
#include "remote_site.h"

#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bfeed_types.h"

static const char *remote_site_env(const char *name) {
  const char *v = getenv(name);
  return v && v[0] ? v : NULL;
}

/* One section of an AWS credentials file, as inih reads it. */
typedef struct remote_site_ini {
  const char *section;
  int seen;
  remote_auth *auth;
  int has_key, has_secret;
} remote_site_ini;

static int remote_site_ini_line(void *arg, const char *section, const char *name, const char *value) {
  remote_site_ini *c = arg;
  /* ~/.aws/config names its sections "profile NAME"; credentials files "NAME". */
  if (strncmp(section, "profile ", 8) == 0) section += 8;
  if (strcmp(section, c->section) != 0) return 1;
  c->seen = 1;
  if (strcmp(name, "aws_access_key_id") == 0)
    snprintf(c->auth->access_key, sizeof c->auth->access_key, "%s", value), c->has_key = 1;
  else if (strcmp(name, "aws_secret_access_key") == 0)
    snprintf(c->auth->secret_key, sizeof c->auth->secret_key, "%s", value), c->has_secret = 1;
  else if (strcmp(name, "aws_session_token") == 0)
    snprintf(c->auth->token, sizeof c->auth->token, "%s", value);
  return 1;
}

/* Keys from section `profile` of file: 1 found, 0 file or section absent
 * (when `required` is 0), else BFEED_EDATASET. */
static int remote_site_from_file(const char *file, const char *profile, int required, remote_auth *a, char *err,
                                 size_t errlen) {
  if (access(file, F_OK) != 0 && !required) return 0;
  remote_site_ini c = {.section = profile, .auth = a};
  int rc = ini_parse(file, remote_site_ini_line, &c);
  if (rc < 0) return snprintf(err, errlen, "credentials file %s: cannot be read", file), BFEED_EDATASET;
  /* inih reports a line by its number: the text may hold a secret. */
  if (rc > 0) return snprintf(err, errlen, "credentials file %s: line %d is not INI", file, rc), BFEED_EDATASET;
  if (!c.seen && !required) return 0;
  if (!c.seen) return snprintf(err, errlen, "credentials file %s: no profile [%s]", file, profile), BFEED_EDATASET;
  if (!c.has_key || !c.has_secret)
    return snprintf(err, errlen, "credentials file %s: profile [%s] lacks aws_access_key_id or aws_secret_access_key",
                    file, profile),
           BFEED_EDATASET;
  a->sign = 1;
  return 1;
}

static void remote_site_shared_file(char *out, size_t n) {
  const char *f = remote_site_env("AWS_SHARED_CREDENTIALS_FILE"), *home = remote_site_env("HOME");
  if (f) snprintf(out, n, "%s", f);
  else snprintf(out, n, "%s/.aws/credentials", home ? home : "");
}

static int remote_site_keys(const remote_site_cfg *cfg, remote_site *s, char *err, size_t errlen) {
  remote_auth *a = &s->auth;
  const char *profile = cfg->profile ? cfg->profile : remote_site_env("AWS_PROFILE");
  if (!profile) profile = "default";
  char shared[1024];
  remote_site_shared_file(shared, sizeof shared);
  int rc;
  if (cfg->credentials_file) {
    if ((rc = remote_site_from_file(cfg->credentials_file, profile, 1, a, err, errlen)) < 0) return rc;
    snprintf(s->where, sizeof s->where, "profile [%s] of %s", profile, cfg->credentials_file);
    return 0;
  }
  if (cfg->profile) {
    if ((rc = remote_site_from_file(shared, profile, 1, a, err, errlen)) < 0) return rc;
    snprintf(s->where, sizeof s->where, "profile [%s] of %s", profile, shared);
    return 0;
  }
  const char *ak = remote_site_env("AWS_ACCESS_KEY_ID"), *sk = remote_site_env("AWS_SECRET_ACCESS_KEY");
  if (ak && sk) {
    const char *tok = remote_site_env("AWS_SESSION_TOKEN");
    snprintf(a->access_key, sizeof a->access_key, "%s", ak);
    snprintf(a->secret_key, sizeof a->secret_key, "%s", sk);
    snprintf(a->token, sizeof a->token, "%s", tok ? tok : "");
    a->sign = 1;
    snprintf(s->where, sizeof s->where, "AWS_ACCESS_KEY_ID%s", tok ? " with AWS_SESSION_TOKEN" : "");
    return 0;
  }
  if ((rc = remote_site_from_file(shared, profile, 0, a, err, errlen)) < 0) return rc;
  if (rc == 1) snprintf(s->where, sizeof s->where, "profile [%s] of %s", profile, shared);
  else snprintf(s->where, sizeof s->where, "no keys: requests unsigned");
  return 0;
}

/* A bucket name as S3 allows it: 3-63 of a-z 0-9 . - (and _ for older
 * buckets and other servers); it goes into URLs and paths unencoded. */
static int remote_site_bucket_ok(const char *b) {
  size_t n = strlen(b);
  if (n == 0 || n > 255) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= 'A' && b[i] <= 'Z') || (b[i] >= '0' && b[i] <= '9') ||
          b[i] == '.' || b[i] == '-' || b[i] == '_'))
      return 0;
  return 1;
}

int remote_site_resolve(const char *scheme, const char *bucket, const remote_site_cfg *cfg, remote_site *s,
                        char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  int gs = strcmp(scheme, "gs") == 0;
  if (!remote_site_bucket_ok(bucket))
    return snprintf(err, errlen, "%s://%s: not a bucket name (letters, digits, '.', '-', '_')", scheme, bucket),
           BFEED_EDATASET;
  snprintf(s->scheme, sizeof s->scheme, "%s", scheme);
  snprintf(s->bucket, sizeof s->bucket, "%s", bucket);
  const char *region = cfg->region;
  if (!region && !gs) region = remote_site_env("AWS_REGION");
  if (!region && !gs) region = remote_site_env("AWS_DEFAULT_REGION");
  if (!region) region = gs ? "auto" : "us-east-1";
  for (const char *p = region; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
      return snprintf(err, errlen, "%s://%s: region '%s': expected letters, digits and '-'", scheme, bucket, region),
             BFEED_EDATASET;
  snprintf(s->auth.region, sizeof s->auth.region, "%s", region);
  const char *endpoint = cfg->endpoint;
  if (!endpoint && !gs) endpoint = remote_site_env("AWS_ENDPOINT_URL_S3");
  if (!endpoint && !gs) endpoint = remote_site_env("AWS_ENDPOINT_URL");
  if (endpoint) {
    size_t n = strlen(endpoint);
    while (n && endpoint[n - 1] == '/') n--;
    if (strncmp(endpoint, "http://", 7) != 0 && strncmp(endpoint, "https://", 8) != 0)
      return snprintf(err, errlen, "%s://%s: endpoint '%s': expected http://HOST[:PORT] or https://...", scheme,
                      bucket, endpoint),
             BFEED_EDATASET;
    snprintf(s->base, sizeof s->base, "%.*s/%s", (int)n, endpoint, bucket);
  } else if (gs) {
    snprintf(s->base, sizeof s->base, "https://storage.googleapis.com/%s", bucket);
  } else if (strchr(bucket, '.')) {
    /* A dotted name breaks the wildcard certificate of virtual hosts. */
    snprintf(s->base, sizeof s->base, "https://s3.%s.amazonaws.com/%s", region, bucket);
  } else {
    snprintf(s->base, sizeof s->base, "https://%s.s3.%s.amazonaws.com", bucket, region);
  }
  return remote_site_keys(cfg, s, err, errlen);
}
