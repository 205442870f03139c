// Package semantic is hybrid search: it keeps an embedding vector for
// every memory, computed off the write path by an embedding model, and
// offers the memory core a second ranking (memory.Ranker) that Search fuses
// with BM25 by reciprocal rank fusion. Off by default; the node turns it on
// from DIR/config.json "hybrid_search" or the --embeddings-* flags.
//
// # The seam
//
// Embedder (text → vector, in batches) is the only thing the feature needs
// from a model. node/embeddings' Client implements it for OpenAI-compatible
// endpoints — Ollama, llama.cpp's server, vLLM, hosted services — and New
// builds one from the configuration, as duplicate detection does; tests
// and in-process models set Config.Embedder.
//
// No default model ships. The Go packages that run a sentence-embedding
// model in process (for all-MiniLM-L6-v2, e.g. clems4ever/all-minilm-l6-v2-go)
// call ONNX Runtime through cgo (yalue/onnxruntime_go) and need its shared
// library; pure-Go ONNX interpreters exist (owulveryck/onnx-go,
// advancedclimatesystems/gonnx) but no module the Go proxy serves carries
// model weights (tens of MB), and a node must not download them at run
// time. So lexical search stays the default and the README says how to
// point a node at a local embedding server.
//
// # Off the write path
//
// A save is acknowledged when its record is durable, as without this
// feature. Changed (a memory.ChangeObserver, on the writer's goroutine)
// only puts the touched memories' keys on a bounded queue (Config.Queue,
// default 4096) without waiting: when the queue is full the key is
// dropped and a flag asks the worker to rescan the store once it has
// caught up. One worker goroutine takes keys in batches (Config.Batch),
// reads each memory's effective view (edits applied), and embeds the ones
// whose text (title and content, cut to 8000 runes, with DocumentPrefix)
// changed since their vector was made: a 64-bit FNV-1a hash of the text is
// kept with each vector, so an importance or tag edit costs nothing. A
// failed request is logged, counted, and retried after Config.Retry by the
// same rescan. Retracted memories are forgotten by the worker; until then
// the search index's filter (Core.Matching) keeps them out of results.
//
// # Storage and restarts
//
// Vectors are stored beside the records as node/store side data, in a
// space named after the model ("emb:MODEL"), keyed namespace NUL id, as
// version | text hash | dimension | float32s (codec.go, fuzzed). At start
// the worker loads the model's vectors into the graph, then rescans: it
// embeds every memory with no vector or a stale one (saved while hybrid
// search was off, or edited while the node was down), and forgets vectors
// of memories no longer there. Changing the model starts a new space; the
// old one stays on disk (delete it by hand, or keep it to switch back).
// The graph itself is not stored; it is rebuilt from the vectors, in the
// background: until then search fuses with a partial graph, or stays
// lexical.
//
// # Each node computes its own vectors
//
// Vectors do not replicate: a peer's memory arrives as a delta like a
// local save, the same ChangeObserver queues it, and each node embeds it
// with its own model. Reasons: nodes may run different models (or none),
// and a vector is only comparable with vectors of the same model; a 384-
// dimension float32 vector is 1,536 bytes, against ~230 bytes for a
// typical memory record on the wire (msgpack), so shipping vectors would
// multiply replication volume by about seven; and nothing replicated can
// be trusted to be the embedding of the text it came with. The cost is one
// embedding per memory per node that holds it: at a local server's few
// hundred texts per second, a 100k-memory namespace joining a node is a few
// minutes of background work, during which search is partly lexical.
//
// # Fusion
//
// Search asks both rankings for max(limit, 50) candidates under the same
// filter and fuses them by reciprocal rank fusion (Cormack et al., 2009):
// score = Σ 1/(k + rank), k = Config.RRFK (default 60), which needs no
// calibration between BM25 scores and cosines. A search waits at most
// Config.QueryTimeoutMillis (default 2s) for its query's vector, then
// answers lexically; recent query vectors are cached (512).
//
// # Other features
//
// Similar answers the memories of a namespace whose vectors are nearest
// to a memory's own, above a cosine; OnStored has a callback told which
// memories the worker has just given a vector. Merging duplicates on save
// (node/memory/dedup) uses both: a memory is compared by vector once its
// vector is in, which is after its save.
package semantic
