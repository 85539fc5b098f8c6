/* session_server: a SavedModel served the way tensorflow_model_server serves it, with nothing
 * Python in the path.
 *
 * It loads the "serve" MetaGraph through TensorFlow's C API (TF_LoadSessionFromSavedModel: the
 * C++ LoadSavedModel of tensorflow/cc/saved_model/loader.cc that TF Serving's SavedModelBundle
 * uses: a session, the saver's restore op, the init op), replays assets.extra's warm-up
 * requests as the server does when it loads a version, then answers the PredictRequests of a
 * request file the way the server's Predict API does: the request's input aliases must be
 * exactly the signature's, each TensorProto becomes a tensor, and every output of the
 * signature is fetched.
 *
 * usage: session_server EXPORT_DIR [REQUESTS RESPONSES] [--op_library=PATH]...
 *   REQUESTS   a TFRecord file of PredictionLog records, the format of the warm-up file
 *   RESPONSES  written for each request, in order (all integers little-endian):
 *              u32 0, u32 n outputs, then per output: u32 len + alias, i32 dtype, i32 rank,
 *              i64 dims[rank], then for DT_STRING per element u64 len + bytes, else
 *              u64 len + the raw data;  or, for a failed request, u32 1, u32 len + message.
 * Prints "loaded", then "warmup N" on stdout; a load or warm-up failure exits with 1.
 *
 * Protocol buffers are read with the few lines of wire-format decoding below (the fields of
 * MetaGraphDef.signature_def, PredictionLog.predict_log.request), so only libtensorflow links.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/c/c_api.h"
#include "tensorflow/c/tf_tstring.h"

#define MAX_TENSORS 64

static void die(const char *what, const char *detail) {
  fprintf(stderr, "session_server: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  exit(1);
}

/* ---- protocol buffer wire format ---- */

typedef struct { const uint8_t *p, *end; } Reader;

static int read_varint(Reader *r, uint64_t *value) {
  uint64_t v = 0;
  for (int shift = 0; r->p < r->end && shift < 64; shift += 7) {
    uint8_t b = *r->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) { *value = v; return 1; }
  }
  return 0;
}

/* The next field: its number, and for a length-delimited one its bytes in *sub. Other wire
 * types are skipped (sub empty). Returns 0 at the end or on malformed input. */
static int next_field(Reader *r, uint32_t *number, Reader *sub) {
  uint64_t key, len;
  if (r->p >= r->end || !read_varint(r, &key)) return 0;
  *number = (uint32_t)(key >> 3);
  sub->p = sub->end = NULL;
  switch (key & 7) {
    case 0: return read_varint(r, &len);
    case 1: if (r->end - r->p < 8) return 0; r->p += 8; return 1;
    case 5: if (r->end - r->p < 4) return 0; r->p += 4; return 1;
    case 2:
      if (!read_varint(r, &len) || (uint64_t)(r->end - r->p) < len) return 0;
      sub->p = r->p; sub->end = r->p + len; r->p += len; return 1;
    default: return 0;
  }
}

/* The first length-delimited field `number` of a message, or an empty reader. */
static Reader field(Reader msg, uint32_t number) {
  Reader sub, none = {NULL, NULL};
  uint32_t n;
  while (next_field(&msg, &n, &sub))
    if (n == number && sub.p) return sub;
  return none;
}

static char *string_of(Reader r) {
  size_t len = r.p ? (size_t)(r.end - r.p) : 0;
  char *s = malloc(len + 1);
  if (len) memcpy(s, r.p, len);
  s[len] = 0;
  return s;
}

/* ---- signatures ---- */

typedef struct { char *alias, *tensor; } Binding;
typedef struct { char *name; Binding inputs[MAX_TENSORS], outputs[MAX_TENSORS]; int n_in, n_out; } Signature;

static Signature signatures[16];
static int n_signatures;

static int read_bindings(Reader map_field_owner, uint32_t number, Binding *out) {
  Reader entry;
  uint32_t n;
  int count = 0;
  while (next_field(&map_field_owner, &n, &entry)) {
    if (n != number || !entry.p) continue;
    if (count == MAX_TENSORS) die("too many tensors in a signature", NULL);
    out[count].alias = string_of(field(entry, 1));
    out[count].tensor = string_of(field(field(entry, 2), 1));  /* TensorInfo.name */
    count++;
  }
  return count;
}

static void read_signatures(const TF_Buffer *meta_graph) {
  Reader msg = {meta_graph->data, (const uint8_t *)meta_graph->data + meta_graph->length};
  Reader entry;
  uint32_t n;
  while (next_field(&msg, &n, &entry)) {
    if (n != 5 || !entry.p) continue;            /* MetaGraphDef.signature_def */
    if (n_signatures == 16) die("too many signatures", NULL);
    Signature *s = &signatures[n_signatures++];
    s->name = string_of(field(entry, 1));
    Reader def = field(entry, 2);
    s->n_in = read_bindings(def, 1, s->inputs);
    s->n_out = read_bindings(def, 2, s->outputs);
  }
}

static Signature *find_signature(const char *name) {
  for (int i = 0; i < n_signatures; i++)
    if (!strcmp(signatures[i].name, name)) return &signatures[i];
  return NULL;
}

/* "name:index" -> TF_Output of the loaded graph. */
static int graph_output(TF_Graph *graph, const char *tensor, TF_Output *out) {
  char name[1024];
  const char *colon = strrchr(tensor, ':');
  size_t len = colon ? (size_t)(colon - tensor) : strlen(tensor);
  if (len >= sizeof name) return 0;
  memcpy(name, tensor, len);
  name[len] = 0;
  out->oper = TF_GraphOperationByName(graph, name);
  out->index = colon ? atoi(colon + 1) : 0;
  return out->oper != NULL;
}

/* ---- TFRecord ---- */

typedef struct { uint8_t *data; size_t size, pos; } Records;

static Records read_file(const char *path) {
  Records f = {NULL, 0, 0};
  FILE *in = fopen(path, "rb");
  if (!in) return f;
  fseek(in, 0, SEEK_END);
  f.size = (size_t)ftell(in);
  fseek(in, 0, SEEK_SET);
  f.data = malloc(f.size ? f.size : 1);
  if (fread(f.data, 1, f.size, in) != f.size) die("cannot read", path);
  fclose(in);
  return f;
}

/* The next record (length u64, its crc u32, data, data crc u32); 0 at the end. */
static int next_record(Records *f, Reader *record) {
  uint64_t len;
  if (f->pos + 12 > f->size) return 0;
  memcpy(&len, f->data + f->pos, 8);
  if (f->pos + 16 + len > f->size) die("truncated TFRecord file", NULL);
  record->p = f->data + f->pos + 12;
  record->end = record->p + len;
  f->pos += 16 + len;
  return 1;
}

/* ---- one Predict call ---- */

typedef struct { char message[4096]; TF_Tensor *outputs[MAX_TENSORS]; Signature *signature; } Answer;

/* Runs the PredictRequest `request` as TF Serving's Predict API does. 1 if it answered. */
static int predict(TF_Session *session, TF_Graph *graph, Reader request, Answer *answer) {
  TF_Status *status = TF_NewStatus();
  char *name = string_of(field(field(request, 1), 3));   /* model_spec.signature_name */
  Signature *sig = find_signature(name[0] ? name : "serving_default");
  TF_Output in_ops[MAX_TENSORS], out_ops[MAX_TENSORS];
  TF_Tensor *in_values[MAX_TENSORS];
  int n_in = 0, ok = 0;
  memset(answer->outputs, 0, sizeof answer->outputs);
  answer->signature = sig;
  if (!sig) {
    snprintf(answer->message, sizeof answer->message, "no signature named '%s'", name);
    goto done;
  }
  Reader entry, msg = request;
  uint32_t n;
  while (next_field(&msg, &n, &entry)) {
    if (n != 2 || !entry.p) continue;                     /* PredictRequest.inputs */
    char *alias = string_of(field(entry, 1));
    Reader proto = field(entry, 2);
    Binding *b = NULL;
    for (int i = 0; i < sig->n_in; i++)
      if (!strcmp(sig->inputs[i].alias, alias)) b = &sig->inputs[i];
    if (!b || n_in == MAX_TENSORS) {
      snprintf(answer->message, sizeof answer->message,
               "input tensor alias not found in signature: %s", alias);
      free(alias);
      goto done;
    }
    free(alias);
    if (!graph_output(graph, b->tensor, &in_ops[n_in])) {
      snprintf(answer->message, sizeof answer->message, "no graph tensor %s", b->tensor);
      goto done;
    }
    TF_Buffer *buffer = TF_NewBufferFromString(proto.p, proto.p ? (size_t)(proto.end - proto.p) : 0);
    in_values[n_in] = TF_AllocateTensor(TF_FLOAT, NULL, 0, sizeof(float));
    TF_TensorFromProto(buffer, in_values[n_in], status);
    TF_DeleteBuffer(buffer);
    n_in++;
    if (TF_GetCode(status) != TF_OK) {
      snprintf(answer->message, sizeof answer->message, "tensor parsing error: %s",
               TF_Message(status));
      goto done;
    }
  }
  if (n_in != sig->n_in) {
    snprintf(answer->message, sizeof answer->message,
             "input size does not match signature: %d != %d", n_in, sig->n_in);
    goto done;
  }
  for (int i = 0; i < sig->n_out; i++)
    if (!graph_output(graph, sig->outputs[i].tensor, &out_ops[i])) {
      snprintf(answer->message, sizeof answer->message, "no graph tensor %s",
               sig->outputs[i].tensor);
      goto done;
    }
  TF_SessionRun(session, NULL, in_ops, in_values, n_in, out_ops, answer->outputs, sig->n_out,
                NULL, 0, NULL, status);
  if (TF_GetCode(status) != TF_OK) {
    snprintf(answer->message, sizeof answer->message, "%s", TF_Message(status));
    goto done;
  }
  ok = 1;
done:
  for (int i = 0; i < n_in; i++) TF_DeleteTensor(in_values[i]);
  TF_DeleteStatus(status);
  free(name);
  return ok;
}

static void put(FILE *out, const void *data, size_t size) {
  if (size && fwrite(data, 1, size, out) != size) die("cannot write the responses", NULL);
}

static void put_u32(FILE *out, uint32_t v) { put(out, &v, 4); }
static void put_u64(FILE *out, uint64_t v) { put(out, &v, 8); }

static void write_answer(FILE *out, int ok, Answer *a) {
  if (!ok) {
    put_u32(out, 1);
    put_u32(out, (uint32_t)strlen(a->message));
    put(out, a->message, strlen(a->message));
    return;
  }
  put_u32(out, 0);
  put_u32(out, (uint32_t)a->signature->n_out);
  for (int i = 0; i < a->signature->n_out; i++) {
    TF_Tensor *t = a->outputs[i];
    const char *alias = a->signature->outputs[i].alias;
    int32_t dtype = TF_TensorType(t), rank = TF_NumDims(t);
    put_u32(out, (uint32_t)strlen(alias));
    put(out, alias, strlen(alias));
    put(out, &dtype, 4);
    put(out, &rank, 4);
    for (int d = 0; d < rank; d++) {
      int64_t dim = TF_Dim(t, d);
      put(out, &dim, 8);
    }
    if (dtype == TF_STRING) {
      const TF_TString *s = TF_TensorData(t);
      for (int64_t e = 0; e < TF_TensorElementCount(t); e++) {
        put_u64(out, TF_StringGetSize(&s[e]));
        put(out, TF_StringGetDataPointer(&s[e]), TF_StringGetSize(&s[e]));
      }
    } else {
      put_u64(out, TF_TensorByteSize(t));
      put(out, TF_TensorData(t), TF_TensorByteSize(t));
    }
  }
}

static void free_answer(Answer *a) {
  for (int i = 0; i < MAX_TENSORS; i++)
    if (a->outputs[i]) TF_DeleteTensor(a->outputs[i]);
}

int main(int argc, char **argv) {
  const char *paths[3] = {NULL, NULL, NULL};
  int n_paths = 0;
  TF_Status *status = TF_NewStatus();
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--op_library=", 13)) {
      TF_LoadLibrary(argv[i] + 13, status);
      if (TF_GetCode(status) != TF_OK) die(argv[i] + 13, TF_Message(status));
    } else if (n_paths < 3) {
      paths[n_paths++] = argv[i];
    } else {
      die("usage: session_server EXPORT_DIR [REQUESTS RESPONSES] [--op_library=PATH]...", NULL);
    }
  }
  if (n_paths != 1 && n_paths != 3)
    die("usage: session_server EXPORT_DIR [REQUESTS RESPONSES] [--op_library=PATH]...", NULL);

  TF_SessionOptions *options = TF_NewSessionOptions();
  TF_Graph *graph = TF_NewGraph();
  TF_Buffer *meta_graph = TF_NewBuffer();
  const char *tags[] = {"serve"};
  TF_Session *session = TF_LoadSessionFromSavedModel(options, NULL, paths[0], tags, 1, graph,
                                                     meta_graph, status);
  if (TF_GetCode(status) != TF_OK) die("loading failed", TF_Message(status));
  read_signatures(meta_graph);
  printf("loaded\n");
  fflush(stdout);

  /* The server replays the warm-up requests while loading; one failure fails the load. */
  char warmup_path[4096];
  snprintf(warmup_path, sizeof warmup_path, "%s/assets.extra/tf_serving_warmup_requests",
           paths[0]);
  Records warmup = read_file(warmup_path);
  Reader record;
  Answer answer;
  int replayed = 0;
  while (warmup.data && next_record(&warmup, &record)) {
    Reader request = field(field(record, 6), 1);          /* predict_log.request */
    if (!request.p) die("warm-up record is not a PredictLog", NULL);
    if (!predict(session, graph, request, &answer)) die("warm-up request failed", answer.message);
    free_answer(&answer);
    replayed++;
  }
  free(warmup.data);
  printf("warmup %d\n", replayed);
  fflush(stdout);

  if (n_paths == 3) {
    Records requests = read_file(paths[1]);
    if (!requests.data) die("cannot read", paths[1]);
    FILE *out = fopen(paths[2], "wb");
    if (!out) die("cannot write", paths[2]);
    while (next_record(&requests, &record)) {
      int ok = predict(session, graph, field(field(record, 6), 1), &answer);
      write_answer(out, ok, &answer);
      free_answer(&answer);
    }
    if (fclose(out)) die("cannot write", paths[2]);
    free(requests.data);
  }
  TF_CloseSession(session, status);
  TF_DeleteSession(session, status);
  TF_DeleteGraph(graph);
  TF_DeleteBuffer(meta_graph);
  TF_DeleteSessionOptions(options);
  TF_DeleteStatus(status);
  return 0;
}
