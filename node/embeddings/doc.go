// Package embeddings is a client of an OpenAI-compatible embeddings
// endpoint: POST {base}/embeddings with {"model": M, "input": [texts]},
// answered by {"data": [{"index": i, "embedding": [floats]}, ...]}. Local
// servers (Ollama, llama.cpp, vLLM) and hosted services speak it.
//
// The node uses it for duplicate detection (node/memory/dedup's Embedder,
// built once by dedup.New from Config.Embeddings) and for hybrid search
// (node/memory/semantic's Embedder, built by semantic.New from the
// node's hybrid_search settings or --embeddings-* flags). Both are off by
// default: detection works without it (MinHash), search stays lexical.
//
// Decisions: answers may list the vectors in any order (index says which
// input each is for); an answer with a missing, repeated or out-of-range
// index, a vector count other than the input count, or vectors of unequal
// or zero dimension is refused whole. The answer body is read up to
// MaxAnswerBytes. Every failure wraps ErrEndpoint and names the URL; a
// non-2xx answer's error quotes the start of its body, since servers put
// the reason there ("model not found").
package embeddings
