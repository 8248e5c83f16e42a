/*
 * test_remote_list.c -- S3's ListObjectsV2 (storage/remote_list.c): the
 * responses of AWS's documentation parsed (entries, truncation and its
 * token, common prefixes, an empty listing, entities, UTF-8, url-encoded
 * names), S3 <Error> bodies, malformed and hostile bodies refused with
 * their line (a DOCTYPE with entities, text and nesting over the limits),
 * every prefix of a valid body either refused cleanly or parsed whole.
 * The request's side: test_remote_list_query.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bfeed_types.h"
#include "remote_list.h"

#define TL_NS "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""

/* AWS's "Example 1: Listing keys" of ListObjectsV2, the second object's
 * Owner and ChecksumAlgorithm as fetch-owner=true and a checksum add them. */
static const char tl_basic[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult " TL_NS ">\n"
    "    <Name>bucket</Name>\n"
    "    <Prefix/>\n"
    "    <KeyCount>205</KeyCount>\n"
    "    <MaxKeys>1000</MaxKeys>\n"
    "    <IsTruncated>false</IsTruncated>\n"
    "    <Contents>\n"
    "        <Key>my-image.jpg</Key>\n"
    "        <LastModified>2009-10-12T17:50:30.000Z</LastModified>\n"
    "        <ETag>\"fba9dede5f27731c9771645a39863328\"</ETag>\n"
    "        <Size>434234</Size>\n"
    "        <StorageClass>STANDARD</StorageClass>\n"
    "    </Contents>\n"
    "    <Contents>\n"
    "        <Key>my-third-image.jpg</Key>\n"
    "        <LastModified>2009-10-12T17:50:30.000Z</LastModified>\n"
    "        <ETag>\"1b2cf535f27731c974343645a3985328\"</ETag>\n"
    "        <ChecksumAlgorithm>CRC32</ChecksumAlgorithm>\n"
    "        <Size>64994</Size>\n"
    "        <StorageClass>STANDARD_IA</StorageClass>\n"
    "        <Owner>\n"
    "            <ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID>\n"
    "            <DisplayName>mtd@amazon.com</DisplayName>\n"
    "        </Owner>\n"
    "    </Contents>\n"
    "</ListBucketResult>\n";

/* A page with more to come (AWS's continuation-token example). */
static const char tl_truncated[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult " TL_NS ">\n"
    "  <Name>bucket</Name>\n"
    "  <Prefix></Prefix>\n"
    "  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>\n"
    "  <KeyCount>2</KeyCount>\n"
    "  <MaxKeys>2</MaxKeys>\n"
    "  <IsTruncated>true</IsTruncated>\n"
    "  <Contents>\n"
    "    <Key>happyface.jpg</Key>\n"
    "    <LastModified>2014-11-21T19:40:05.000Z</LastModified>\n"
    "    <ETag>\"70ee1738b6b21e2c8a43f3a5ab0eee71\"</ETag>\n"
    "    <Size>11</Size>\n"
    "    <StorageClass>STANDARD</StorageClass>\n"
    "  </Contents>\n"
    "  <Contents>\n"
    "    <Key>photos/sample.jpg</Key>\n"
    "    <LastModified>2014-11-21T19:40:05.000Z</LastModified>\n"
    "    <ETag>\"becf17f89c30367a9a44495d62ed521a-1\"</ETag>\n"
    "    <Size>18446744073709551615</Size>\n"
    "    <StorageClass>STANDARD</StorageClass>\n"
    "  </Contents>\n"
    "</ListBucketResult>\n";

/* Delimiter "/": objects at the top, "folders" as CommonPrefixes (AWS's
 * example); the listing's own <Prefix> is not one of them. */
static const char tl_common[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult " TL_NS ">\n"
    "  <Name>example-bucket</Name>\n"
    "  <Prefix></Prefix>\n"
    "  <KeyCount>3</KeyCount>\n"
    "  <MaxKeys>1000</MaxKeys>\n"
    "  <Delimiter>/</Delimiter>\n"
    "  <IsTruncated>false</IsTruncated>\n"
    "  <Contents>\n"
    "    <Key>sample.jpg</Key>\n"
    "    <LastModified>2017-02-26T01:56:20.000Z</LastModified>\n"
    "    <ETag>\"bf1d737a4d46a19f3bced6905cc8b902\"</ETag>\n"
    "    <Size>142863</Size>\n"
    "    <StorageClass>STANDARD</StorageClass>\n"
    "  </Contents>\n"
    "  <CommonPrefixes>\n"
    "    <Prefix>photos/</Prefix>\n"
    "  </CommonPrefixes>\n"
    "  <CommonPrefixes>\n"
    "    <Prefix>videos/</Prefix>\n"
    "  </CommonPrefixes>\n"
    "</ListBucketResult>\n";

static const char tl_empty[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                               "<ListBucketResult " TL_NS "><Name>bucket</Name><Prefix>nothing/</Prefix>"
                               "<KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>"
                               "</ListBucketResult>";

/* Names with entities, character references, CDATA and UTF-8; an ETag
 * quoted with &quot;, as some servers write it. */
static const char tl_entities[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult " TL_NS ">\n"
    "<IsTruncated>false</IsTruncated>\n"
    "<Contents><Key>a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;.tar</Key><Size>1</Size>"
    "<ETag>&quot;abc&quot;</ETag><LastModified>2000-02-29T23:59:59.999999999+02:00</LastModified></Contents>\n"
    "<Contents><Key>caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac.tar</Key><Size>0</Size></Contents>\n"
    "<Contents><Key>&#x65E5;&#26412;/&#x1F600;</Key><Size>2</Size><ETag>\"\"</ETag></Contents>\n"
    "<Contents><Key><![CDATA[x<y>&z]]></Key><Size>3</Size>"
    "<LastModified>1969-12-31T23:59:59.5Z</LastModified></Contents>\n"
    "</ListBucketResult>\n";

static void tl_parse_ok(const char *xml, remote_list_page *pg) {
  char err[512] = "";
  int rc = remote_list_parse(xml, strlen(xml), pg, err, sizeof err);
  if (rc != 0) fail_msg("parse: %d %s", rc, err);
}

static void test_basic(void **state) {
  (void)state;
  remote_list_page pg;
  tl_parse_ok(tl_basic, &pg);
  assert_int_equal(pg.n_entries, 2);
  assert_int_equal(pg.prefixes.n, 0);
  assert_false(pg.is_truncated);
  assert_null(pg.next_token);
  assert_int_equal(pg.key_count, 205);
  assert_false(pg.url_encoded);
  const remote_list_entry *e = &pg.entries[0];
  assert_string_equal(e->key, "my-image.jpg");
  assert_int_equal(e->size, 434234);
  assert_string_equal(e->etag, "fba9dede5f27731c9771645a39863328");
  assert_string_equal(e->last_modified, "2009-10-12T17:50:30.000Z");
  assert_int_equal(e->mtime_s, 1255369830); /* python3: datetime.fromisoformat(...).timestamp() */
  assert_int_equal(e->mtime_ns, 0);
  e = &pg.entries[1];
  assert_string_equal(e->key, "my-third-image.jpg"); /* the Owner's ID is not a key */
  assert_int_equal(e->size, 64994);
  assert_string_equal(e->etag, "1b2cf535f27731c974343645a3985328");
  remote_list_page_free(&pg);
  assert_null(pg.entries);
  remote_list_page_free(&pg); /* twice: a zeroed page */
}

static void test_truncated(void **state) {
  (void)state;
  remote_list_page pg;
  tl_parse_ok(tl_truncated, &pg);
  assert_true(pg.is_truncated);
  assert_string_equal(pg.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
  assert_int_equal(pg.key_count, 2);
  assert_int_equal(pg.n_entries, 2);
  assert_string_equal(pg.entries[0].key, "happyface.jpg");
  assert_int_equal(pg.entries[0].mtime_s, 1416598805);
  assert_string_equal(pg.entries[1].key, "photos/sample.jpg");
  assert_true(pg.entries[1].size == UINT64_MAX);
  assert_string_equal(pg.entries[1].etag, "becf17f89c30367a9a44495d62ed521a-1"); /* a multipart upload's */
  remote_list_page_free(&pg);
}

static void test_common_prefixes(void **state) {
  (void)state;
  remote_list_page pg;
  tl_parse_ok(tl_common, &pg);
  assert_int_equal(pg.n_entries, 1);
  assert_string_equal(pg.entries[0].key, "sample.jpg");
  assert_int_equal(pg.entries[0].mtime_s, 1488074180);
  assert_int_equal(pg.prefixes.n, 2);
  assert_string_equal(pg.prefixes.v[0], "photos/");
  assert_string_equal(pg.prefixes.v[1], "videos/");
  remote_list_page_free(&pg);
  tl_parse_ok(tl_empty, &pg);
  assert_int_equal(pg.n_entries, 0);
  assert_int_equal(pg.prefixes.n, 0);
  assert_int_equal(pg.key_count, 0);
  assert_false(pg.is_truncated);
  remote_list_page_free(&pg);
}

static void test_entities_utf8(void **state) {
  (void)state;
  remote_list_page pg;
  tl_parse_ok(tl_entities, &pg);
  assert_int_equal(pg.n_entries, 4);
  assert_string_equal(pg.entries[0].key, "a&b <c> \"d\" 'e'.tar");
  assert_string_equal(pg.entries[0].etag, "abc");
  /* 2000-02-29T21:59:59Z, a leap day; nanoseconds kept to the ninth digit. */
  assert_int_equal(pg.entries[0].mtime_s, 951861599);
  assert_int_equal(pg.entries[0].mtime_ns, 999999999);
  assert_string_equal(pg.entries[1].key, "caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac.tar");
  assert_string_equal(pg.entries[1].etag, ""); /* absent */
  assert_string_equal(pg.entries[1].last_modified, "");
  assert_int_equal(pg.entries[1].mtime_s, 0);
  assert_string_equal(pg.entries[2].key, "\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x98\x80");
  assert_string_equal(pg.entries[2].etag, "");
  assert_string_equal(pg.entries[3].key, "x<y>&z");
  assert_int_equal(pg.entries[3].mtime_s, -1); /* half a second before the epoch */
  assert_int_equal(pg.entries[3].mtime_ns, 500000000);
  remote_list_page_free(&pg);
}

/* encoding-type=url: names %-decoded ('+' a space, as botocore's
 * unquote_plus), wherever EncodingType comes; the token is opaque. */
static void test_url_encoded(void **state) {
  (void)state;
  static const char xml[] = "<ListBucketResult " TL_NS "><IsTruncated>true</IsTruncated>"
                            "<NextContinuationToken>a%2Bb+c</NextContinuationToken>"
                            "<Contents><Key>a+b%2Bc%0Ad%C3%A9</Key><Size>5</Size></Contents>"
                            "<CommonPrefixes><Prefix>photos%2F2024%2F</Prefix></CommonPrefixes>"
                            "<EncodingType>url</EncodingType></ListBucketResult>";
  remote_list_page pg;
  tl_parse_ok(xml, &pg);
  assert_true(pg.url_encoded);
  assert_string_equal(pg.entries[0].key, "a b+c\nd\xc3\xa9");
  assert_string_equal(pg.prefixes.v[0], "photos/2024/");
  assert_string_equal(pg.next_token, "a%2Bb+c");
  remote_list_page_free(&pg);
  char err[512];
  static const char bad[] = "<ListBucketResult><IsTruncated>false</IsTruncated><EncodingType>url</EncodingType>"
                            "<Contents><Key>a%2</Key><Size>5</Size></Contents></ListBucketResult>";
  assert_int_equal(remote_list_parse(bad, strlen(bad), &pg, err, sizeof err), BFEED_EIO);
  assert_non_null(strstr(err, "object \"a%2\": a bad %-escape"));
  static const char nul[] = "<ListBucketResult><IsTruncated>false</IsTruncated><EncodingType>url</EncodingType>"
                            "<Contents><Key>a%00b</Key><Size>5</Size></Contents></ListBucketResult>";
  assert_int_equal(remote_list_parse(nul, strlen(nul), &pg, err, sizeof err), BFEED_EIO);
  static const char other[] = "<ListBucketResult><IsTruncated>false</IsTruncated><EncodingType>base64</EncodingType>"
                              "</ListBucketResult>";
  assert_int_equal(remote_list_parse(other, strlen(other), &pg, err, sizeof err), BFEED_EIO);
  assert_non_null(strstr(err, "EncodingType \"base64\" is not url"));
}

/* Local names count, whatever the namespace: none (some S3-compatible
 * servers), S3's by a prefix, another's. */
static void test_namespaces(void **state) {
  (void)state;
  static const char *const docs[] = {
      "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>7</Size></Contents>"
      "</ListBucketResult>",
      "<s3:ListBucketResult xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\"><s3:IsTruncated>false"
      "</s3:IsTruncated><s3:Contents><s3:Key>k</s3:Key><s3:Size>7</s3:Size></s3:Contents></s3:ListBucketResult>",
      "<ListBucketResult xmlns=\"urn:other\"><IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>7</Size>"
      "</Contents></ListBucketResult>",
  };
  for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
    remote_list_page pg;
    tl_parse_ok(docs[i], &pg);
    assert_int_equal(pg.n_entries, 1);
    assert_string_equal(pg.entries[0].key, "k");
    assert_int_equal(pg.entries[0].size, 7);
    remote_list_page_free(&pg);
  }
}

/* AWS's error body (no namespace), and what is not one. */
static void test_error_body(void **state) {
  (void)state;
  static const char xml[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                            "<Error>\n"
                            "  <Code>NoSuchBucket</Code>\n"
                            "  <Message>The specified bucket does not exist</Message>\n"
                            "  <BucketName>bfeed-missing</BucketName>\n"
                            "  <RequestId>4442587FB7D0A2F9</RequestId>\n"
                            "  <HostId>9+ZbVHZBXNhX4hOuX8XKzP2EBj0QFWo+fGYB8s7UHx/DVRtBAPE=</HostId>\n"
                            "</Error>\n";
  char code[64], msg[256];
  assert_int_equal(remote_list_error(xml, strlen(xml), code, sizeof code, msg, sizeof msg), 0);
  assert_string_equal(code, "NoSuchBucket");
  assert_string_equal(msg, "The specified bucket does not exist");
  char small[5];
  assert_int_equal(remote_list_error(xml, strlen(xml), small, sizeof small, NULL, 0), 0);
  assert_string_equal(small, "NoSu");
  static const char bare[] = "<Error><Code>AccessDenied</Code></Error>";
  assert_int_equal(remote_list_error(bare, strlen(bare), code, sizeof code, msg, sizeof msg), 0);
  assert_string_equal(code, "AccessDenied");
  assert_string_equal(msg, "");
  /* A listing, garbage, nothing, a cut body: not error bodies. */
  assert_int_equal(remote_list_error(tl_basic, strlen(tl_basic), code, sizeof code, msg, sizeof msg), BFEED_EIO);
  assert_string_equal(code, "");
  assert_int_equal(remote_list_error("<html>502</html>", 16, code, sizeof code, msg, sizeof msg), BFEED_EIO);
  assert_int_equal(remote_list_error("", 0, code, sizeof code, msg, sizeof msg), BFEED_EIO);
  assert_int_equal(remote_list_error(xml, 60, code, sizeof code, msg, sizeof msg), BFEED_EIO);
  /* The listing's parser refuses it, saying what came instead. */
  remote_list_page pg;
  char err[512];
  assert_int_equal(remote_list_parse(xml, strlen(xml), &pg, err, sizeof err), BFEED_EIO);
  assert_string_equal(err, "ListObjectsV2 response: line 2: the root element is <Error>, not <ListBucketResult>");
}

static void tl_refused(const char *xml, size_t len, const char *want) {
  remote_list_page pg;
  char err[512] = "";
  int rc = remote_list_parse(xml, len, &pg, err, sizeof err);
  if (rc != BFEED_EIO) fail_msg("accepted or not EIO (%d): %.200s", rc, xml);
  if (!strstr(err, want)) fail_msg("\"%s\" not in \"%s\"", want, err);
  assert_int_equal(strncmp(err, "ListObjectsV2 response: ", 24), 0);
  assert_null(pg.entries); /* freed */
  assert_null(pg.next_token);
}

#define TL_REFUSED(xml, want) tl_refused(xml, strlen(xml), want)
#define TL_PAGE(body) "<ListBucketResult " TL_NS "><IsTruncated>false</IsTruncated>" body "</ListBucketResult>"

static void test_malformed(void **state) {
  (void)state;
  TL_REFUSED("<ListBucketResult>\n<IsTruncated>false</IsTruncated>\n<Contents><<Key>", "line 3: not well-formed "
                                                                                        "(invalid token)");
  TL_REFUSED("<ListBucketResult>\n<Contents>\n</Key>", "line 3: mismatched tag");
  TL_REFUSED("<ListBucketResult>\n\n<Contents><Key>&nbsp;</Key>", "line 3: undefined entity");
  TL_REFUSED("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult><x/>", "junk after document");
  TL_REFUSED("<ListBucketResult><Contents><Key>\xff</Key>", "not well-formed");
  TL_REFUSED("", "line 1: no element found");
  tl_refused(tl_basic, 0, "no element found");
  TL_REFUSED("<ListAllMyBucketsResult/>", "the root element is <ListAllMyBucketsResult>, not <ListBucketResult>");
  /* What a listing must say, and say once. */
  TL_REFUSED("<ListBucketResult " TL_NS "/>", "no <IsTruncated>");
  TL_REFUSED("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
             "IsTruncated is true but there is no NextContinuationToken");
  TL_REFUSED("<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken/></ListBucketResult>",
             "no NextContinuationToken");
  TL_REFUSED("<ListBucketResult><IsTruncated>yes</IsTruncated></ListBucketResult>",
             "IsTruncated \"yes\" is neither true nor false");
  TL_REFUSED(TL_PAGE("<IsTruncated>true</IsTruncated>"), "a second <IsTruncated>");
  TL_REFUSED(TL_PAGE("<KeyCount>-1</KeyCount>"), "KeyCount \"-1\" is not a count");
  TL_REFUSED(TL_PAGE("<Contents><Size>1</Size></Contents>"), "<Contents> without a <Key>");
  TL_REFUSED(TL_PAGE("<Contents><Key>a.tar</Key></Contents>"), "object \"a.tar\": <Contents> without a <Size>");
  TL_REFUSED(TL_PAGE("<Contents><Key>a</Key><Key>b</Key><Size>1</Size></Contents>"), "a second <Key>");
  TL_REFUSED(TL_PAGE("<CommonPrefixes></CommonPrefixes>"), "<CommonPrefixes> without a <Prefix>");
  TL_REFUSED(TL_PAGE("<CommonPrefixes><Prefix>a/</Prefix><Prefix>b/</Prefix></CommonPrefixes>"),
             "a second <Prefix>");
  TL_REFUSED(TL_PAGE("<Contents><Key>a<b/>c</Key><Size>1</Size></Contents>"), "an element <b> inside <Key>");
  /* A Size that is not a number names its object, wherever the Key is. */
  TL_REFUSED(TL_PAGE("<Contents><Size>12x</Size><Key>shard-07.tar</Key></Contents>"),
             "object \"shard-07.tar\": Size \"12x\" is not a number of bytes");
  TL_REFUSED(TL_PAGE("<Contents><Key>a</Key><Size>18446744073709551616</Size></Contents>"), "is not a number");
  TL_REFUSED(TL_PAGE("<Contents><Key>a</Key><Size> 1</Size></Contents>"), "is not a number");
  TL_REFUSED(TL_PAGE("<Contents><Key>a</Key><Size></Size></Contents>"), "is not a number");
  TL_REFUSED(TL_PAGE("<Contents><Key>a</Key><Size>0000000000000000000000000000000000000001</Size></Contents>"),
             "is not a number"); /* too long to keep: never read as its first digits */
  static const char *const bad_times[] = {
      "2009-13-12T17:50:30.000Z", "2009-02-29T17:50:30Z", "1900-02-29T00:00:00Z", "2009-10-12T24:00:00Z",
      "2009-10-12T17:50:30",      "2009-10-12 17:50:30Z", "2009-10-12T17:50:30.Z", "2009-10-12T17:50:30+0200",
      "2009-10-12T17:50:30Zjunk", "09-10-12T17:50:30Z",   "",
      "2009-10-12T17:50:30.000000000000000000000000000000000000Z",
  };
  for (size_t i = 0; i < sizeof bad_times / sizeof *bad_times; i++) {
    char xml[512];
    snprintf(xml, sizeof xml, TL_PAGE("<Contents><Key>t%zu</Key><Size>1</Size><LastModified>%s</LastModified>"
                                      "</Contents>"), i, bad_times[i]);
    char want[64];
    snprintf(want, sizeof want, "object \"t%zu\": LastModified", i);
    tl_refused(xml, strlen(xml), want);
  }
}

/* The times a listing may carry, to Unix time (python3's datetime). */
static void test_times(void **state) {
  (void)state;
  static const struct {
    const char *t;
    int64_t s, ns;
  } ok[] = {
      {"2038-01-19T03:14:08Z", 2147483648ll, 0},          {"9999-12-31T23:59:59Z", 253402300799ll, 0},
      {"0001-01-01T00:00:00Z", -62135596800ll, 0},        {"2016-12-31T23:59:60Z", 1483228800ll, 0},
      {"2009-10-12T19:50:30.5+02:00", 1255369830ll, 500000000}, {"2009-10-12T15:50:30.123456789123-02:00", 1255369830ll,
                                                           123456789},
      {"2009-10-12t17:50:30z", 1255369830ll, 0},
  };
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    char xml[512];
    snprintf(xml, sizeof xml, TL_PAGE("<Contents><Key>k</Key><Size>1</Size><LastModified>%s</LastModified>"
                                      "</Contents>"), ok[i].t);
    remote_list_page pg;
    tl_parse_ok(xml, &pg);
    assert_string_equal(pg.entries[0].last_modified, ok[i].t);
    if (pg.entries[0].mtime_s != ok[i].s || pg.entries[0].mtime_ns != ok[i].ns)
      fail_msg("%s: %lld.%09lld", ok[i].t, (long long)pg.entries[0].mtime_s, (long long)pg.entries[0].mtime_ns);
    remote_list_page_free(&pg);
  }
}

/* No DOCTYPE, so no entity can be declared: the billion laughs, an
 * external entity, even a harmless internal subset, refused at once. */
static void test_doctype(void **state) {
  (void)state;
  /* lol9 would be 10^9 "lol"s. */
  char laughs[2048];
  int k = snprintf(laughs, sizeof laughs, "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol0 \"lol\">\n");
  for (int i = 1; i <= 9; i++) {
    k += snprintf(laughs + k, sizeof laughs - (size_t)k, " <!ENTITY lol%d \"", i);
    for (int j = 0; j < 10; j++) k += snprintf(laughs + k, sizeof laughs - (size_t)k, "&lol%d;", i - 1);
    k += snprintf(laughs + k, sizeof laughs - (size_t)k, "\">\n");
  }
  snprintf(laughs + k, sizeof laughs - (size_t)k, "]>\n<ListBucketResult><IsTruncated>false</IsTruncated><Contents>"
           "<Key>&lol9;</Key><Size>1</Size></Contents></ListBucketResult>\n");
  TL_REFUSED(laughs, "line 2: a DOCTYPE declaration (refused");
  TL_REFUSED("<!DOCTYPE x SYSTEM \"file:///etc/passwd\"><ListBucketResult><IsTruncated>false</IsTruncated>"
             "<Contents><Key>&x;</Key><Size>1</Size></Contents></ListBucketResult>",
             "DOCTYPE");
  TL_REFUSED("<!DOCTYPE ListBucketResult [<!ENTITY k \"key\">]>" TL_PAGE(""), "DOCTYPE");
  TL_REFUSED("<!DOCTYPE ListBucketResult>" TL_PAGE(""), "DOCTYPE");
  char code[32];
  assert_int_equal(remote_list_error(laughs, strlen(laughs), code, sizeof code, NULL, 0), BFEED_EIO);
}

/* Text over REMOTE_LIST_TEXT_MAX bytes (after entities), in any element;
 * nesting over REMOTE_LIST_DEPTH_MAX; a page over REMOTE_LIST_ITEMS_MAX. */
static void test_limits(void **state) {
  (void)state;
  size_t cap = 6 * (size_t)REMOTE_LIST_ITEMS_MAX * 40;
  char *xml = malloc(cap);
  assert_non_null(xml);
  remote_list_page pg;
  char err[512];
  for (int over = 0; over <= 1; over++) {
    int n = REMOTE_LIST_TEXT_MAX + over;
    int k = snprintf(xml, cap, "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>");
    memset(xml + k, 'k', (size_t)n);
    k += n;
    k += snprintf(xml + k, cap - (size_t)k, "</Key><Size>1</Size></Contents></ListBucketResult>");
    int rc = remote_list_parse(xml, (size_t)k, &pg, err, sizeof err);
    if (over) assert_non_null(strstr(err, "the text of <Key> runs over 4096 bytes"));
    else assert_int_equal(strlen(pg.entries[0].key), REMOTE_LIST_TEXT_MAX);
    assert_int_equal(rc, over ? BFEED_EIO : 0);
    remote_list_page_free(&pg);
  }
  /* Counted after entities: 820 of them are 4100 bytes of text. */
  int k = snprintf(xml, cap, "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>");
  for (int i = 0; i < 820; i++) k += snprintf(xml + k, cap - (size_t)k, "&#x41;&amp;&lt;&gt;&quot;");
  k += snprintf(xml + k, cap - (size_t)k, "</Key><Size>1</Size></Contents></ListBucketResult>");
  tl_refused(xml, (size_t)k, "runs over");
  /* In an element nobody reads, too. */
  k = snprintf(xml, cap, "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Owner><DisplayName>");
  memset(xml + k, 'd', 5000);
  k += 5000;
  k += snprintf(xml + k, cap - (size_t)k, "</DisplayName></Owner></Contents></ListBucketResult>");
  tl_refused(xml, (size_t)k, "the text of an element runs over");
  /* REMOTE_LIST_DEPTH_MAX elements open at once, then one more. */
  for (int depth = REMOTE_LIST_DEPTH_MAX; depth <= REMOTE_LIST_DEPTH_MAX + 1; depth++) {
    k = snprintf(xml, cap, "<ListBucketResult><IsTruncated>false</IsTruncated>");
    for (int i = 1; i < depth; i++) k += snprintf(xml + k, cap - (size_t)k, "<a>");
    for (int i = 1; i < depth; i++) k += snprintf(xml + k, cap - (size_t)k, "</a>");
    k += snprintf(xml + k, cap - (size_t)k, "</ListBucketResult>");
    int rc = remote_list_parse(xml, (size_t)k, &pg, err, sizeof err);
    assert_int_equal(rc, depth > REMOTE_LIST_DEPTH_MAX ? BFEED_EIO : 0);
    if (rc) assert_non_null(strstr(err, "elements nested over 16 deep"));
    remote_list_page_free(&pg);
  }
  /* Deep nesting like a stack attack: refused at the limit, not after. */
  k = 0;
  k += snprintf(xml, cap, "<ListBucketResult>");
  for (int i = 0; i < 100000; i++) memcpy(xml + k, "<a>", 3), k += 3;
  tl_refused(xml, (size_t)k, "nested over");
  /* REMOTE_LIST_ITEMS_MAX entries and prefixes, then one more. */
  for (int over = 0; over <= 1; over++) {
    k = snprintf(xml, cap, "<ListBucketResult><IsTruncated>false</IsTruncated>");
    for (int i = 0; i < REMOTE_LIST_ITEMS_MAX / 2; i++)
      k += snprintf(xml + k, cap - (size_t)k, "<Contents><Key>%d</Key><Size>%d</Size></Contents>", i, i);
    for (int i = 0; i < REMOTE_LIST_ITEMS_MAX / 2 + over; i++)
      k += snprintf(xml + k, cap - (size_t)k, "<CommonPrefixes><Prefix>%d/</Prefix></CommonPrefixes>", i);
    k += snprintf(xml + k, cap - (size_t)k, "</ListBucketResult>");
    int rc = remote_list_parse(xml, (size_t)k, &pg, err, sizeof err);
    assert_int_equal(rc, over ? BFEED_EIO : 0);
    if (!over) assert_int_equal(pg.n_entries + pg.prefixes.n, REMOTE_LIST_ITEMS_MAX);
    if (!over) assert_string_equal(pg.entries[REMOTE_LIST_ITEMS_MAX / 2 - 1].key, "49999");
    else assert_non_null(strstr(err, "over 100000 entries in one page"));
    remote_list_page_free(&pg);
  }
  free(xml);
}

/* Every prefix of a valid body (a connection dropped at any byte): refused
 * cleanly, or, once only whitespace is missing, the whole page. */
static void tl_every_prefix(const char *xml, size_t want_entries) {
  size_t len = strlen(xml), accepted = 0;
  for (size_t n = 0; n <= len; n++) {
    char *copy = malloc(n ? n : 1); /* exactly the prefix's bytes: ASan sees a read past them */
    assert_non_null(copy);
    memcpy(copy, xml, n);
    remote_list_page pg;
    char err[512] = "";
    int rc = remote_list_parse(copy, n, &pg, err, sizeof err);
    if (rc == 0) {
      accepted++;
      assert_int_equal(pg.n_entries, want_entries);
      assert_true(n >= len - 1); /* only the final newline may be cut */
    } else {
      assert_int_equal(rc, BFEED_EIO);
      assert_int_equal(strncmp(err, "ListObjectsV2 response: ", 24), 0);
      assert_null(pg.entries);
    }
    remote_list_page_free(&pg);
    char code[32], msg[32];
    assert_int_equal(remote_list_error(copy, n, code, sizeof code, msg, sizeof msg), BFEED_EIO);
    free(copy);
  }
  assert_true(accepted >= 1);
}

static void test_every_prefix(void **state) {
  (void)state;
  tl_every_prefix(tl_basic, 2);
  tl_every_prefix(tl_truncated, 2);
  tl_every_prefix(tl_common, 1);
  tl_every_prefix(tl_entities, 4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basic),          cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_common_prefixes), cmocka_unit_test(test_entities_utf8),
      cmocka_unit_test(test_url_encoded),    cmocka_unit_test(test_namespaces),
      cmocka_unit_test(test_error_body),     cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_times),          cmocka_unit_test(test_doctype),
      cmocka_unit_test(test_limits),         cmocka_unit_test(test_every_prefix),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
