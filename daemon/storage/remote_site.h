/*
 * remote_site.h -- where an s3:// or gs:// bucket is served from and how
 * requests to it are signed, resolved the way the AWS tools resolve them.
 * Called by storage_remote.c when a bucket is first named.
 *
 * Keys, in order (the first that gives them wins):
 *   1. the dataset's credentials_file (AWS's INI format), its `profile`
 *      section (else AWS_PROFILE, else "default"); a missing file, section
 *      or key is an error naming the file;
 *   2. an explicit `profile` key: that section of the shared credentials
 *      file (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials);
 *   3. AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN too);
 *   4. the shared credentials file's AWS_PROFILE or "default" section;
 *   5. none: requests go unsigned (public buckets).
 * Region: the `region` key, AWS_REGION, AWS_DEFAULT_REGION, "us-east-1"
 * ("auto" for gs://). Endpoint: the `endpoint` key, AWS_ENDPOINT_URL_S3,
 * AWS_ENDPOINT_URL; else AWS (virtual-hosted: https://BUCKET.s3.REGION.
 * amazonaws.com) for s3:// and Cloud Storage's XML API
 * (https://storage.googleapis.com, HMAC keys) for gs://. An endpoint
 * given is addressed path-style (ENDPOINT/BUCKET/KEY), as MinIO and Ceph
 * expect.
 */
#ifndef BFEED_REMOTE_SITE_H
#define BFEED_REMOTE_SITE_H

#include <stddef.h>

#include "remote_http.h"

/* A dataset's settings for its bucket; NULL fields are not set. */
typedef struct remote_site_cfg {
  const char *endpoint, *region, *profile, *credentials_file;
} remote_site_cfg;

typedef struct remote_site {
  char scheme[8];   /* "s3", "gs" */
  char bucket[256];
  char base[1024];  /* URL of the bucket's root, no trailing '/': keys follow "/KEY" */
  char where[600];  /* where the keys came from, for the log: never a key */
  remote_auth auth;
} remote_site;

/* Resolve bucket's site. 0, or BFEED_EDATASET naming the file or setting
 * that is wrong (never printing a key). */
int remote_site_resolve(const char *scheme, const char *bucket, const remote_site_cfg *cfg, remote_site *out,
                        char *err, size_t errlen);

#endif
