package semantic

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemohq/mnemo/node/embeddings"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/search/vector"
	"github.com/mnemohq/mnemo/node/store"
)

// Defaults and bounds of Config.
const (
	DefaultRRFK         = 60
	DefaultQueue        = 4096
	DefaultBatch        = 32
	DefaultTimeout      = 30 * time.Second
	DefaultQueryTimeout = 2 * time.Second
	DefaultRetry        = 30 * time.Second
	maxQueue            = 1 << 20
	maxBatch            = 512
	maxEmbedRunes       = 8000 // of one text sent to the embedder
	queryCacheSize      = 512
)

// Embedder turns texts into vectors, one per text, in order, all of one
// dimension. Embed blocks (a network round trip) until ctx ends; it is
// called from the feature's worker and from concurrent searches (one query
// text each), so it must be safe for concurrent use. node/embeddings'
// Client is the implementation for OpenAI-compatible endpoints.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float64, error)
}

var _ Embedder = (*embeddings.Client)(nil)

// Config configures hybrid search (the node's DIR/config.json
// "hybrid_search"). The zero value is off: lexical search only.
type Config struct {
	// Enabled turns hybrid search on with the endpoint below (or Embedder).
	Enabled bool `json:"enabled"`
	// BaseURL is the OpenAI-compatible endpoint without /embeddings, e.g.
	// http://127.0.0.1:11434/v1 (Ollama). Required when Enabled.
	BaseURL string `json:"base_url,omitempty"`
	// Model is the "model" of every request, and names the stored vectors:
	// another model's vectors are neither read nor overwritten. Required.
	Model string `json:"model,omitempty"`
	// APIKeyEnv names the environment variable holding the bearer key
	// (the key never sits in config.json); "" sends none.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// TimeoutSeconds bounds one embedding request of the worker; default 30.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
	// QueryTimeoutMillis bounds how long a search waits for its query's
	// vector before it answers lexically; default 2000.
	QueryTimeoutMillis int `json:"query_timeout_ms,omitempty"`
	// QueryPrefix and DocumentPrefix are put before query and memory texts,
	// for models trained with them (e5: "query: " and "passage: ";
	// nomic-embed-text: "search_query: " and "search_document: ").
	QueryPrefix    string `json:"query_prefix,omitempty"`
	DocumentPrefix string `json:"document_prefix,omitempty"`
	// RRFK is the k of reciprocal rank fusion, 1..1000; default 60.
	RRFK int `json:"rrf_k,omitempty"`
	// Queue bounds the memories waiting for a vector, 1..1048576; default
	// 4096. A change that finds it full is not waited for: the worker
	// rescans the store for memories without a current vector instead.
	Queue int `json:"queue,omitempty"`
	// Batch is the most texts per embedding request, 1..512; default 32.
	Batch int `json:"batch,omitempty"`
	// RetrySeconds is the pause after a failed embedding request before
	// the worker tries again; default 30.
	RetrySeconds int `json:"retry_seconds,omitempty"`

	// Embedder computes the vectors. Default: a node/embeddings client of
	// BaseURL and Model, built by New. Tests set it directly.
	Embedder Embedder `json:"-"`
	// Index configures the vector index; its Dim comes from the first
	// vector the embedder returns. Zero: vector's defaults.
	Index vector.Config `json:"-"`
	// Retry overrides RetrySeconds (tests). Zero: RetrySeconds.
	Retry time.Duration `json:"-"`
}

// validate fills defaults and builds the default Embedder; errors wrap
// memapi.ErrInvalid and name the setting.
func (c *Config) validate() error {
	if !c.Enabled {
		return nil
	}
	if c.Embedder == nil {
		if !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
			return invalid("hybrid_search.base_url must be an http(s) URL, got %q", c.BaseURL)
		}
	}
	if c.Model == "" || strings.IndexByte(c.Model, 0) >= 0 {
		return invalid("hybrid_search.model is required (and has no NUL byte)")
	}
	for _, f := range []struct {
		name     string
		v        *int
		def, max int
	}{
		{"timeout_seconds", &c.TimeoutSeconds, int(DefaultTimeout / time.Second), 3600},
		{"query_timeout_ms", &c.QueryTimeoutMillis, int(DefaultQueryTimeout / time.Millisecond), 60000},
		{"rrf_k", &c.RRFK, DefaultRRFK, 1000},
		{"queue", &c.Queue, DefaultQueue, maxQueue},
		{"batch", &c.Batch, DefaultBatch, maxBatch},
		{"retry_seconds", &c.RetrySeconds, int(DefaultRetry / time.Second), 86400},
	} {
		if *f.v == 0 {
			*f.v = f.def
		}
		if *f.v < 1 || *f.v > f.max {
			return invalid("hybrid_search.%s must be 1..%d, got %d", f.name, f.max, *f.v)
		}
	}
	if c.Retry == 0 {
		c.Retry = time.Duration(c.RetrySeconds) * time.Second
	}
	if c.Embedder == nil {
		key := ""
		if c.APIKeyEnv != "" {
			key = os.Getenv(c.APIKeyEnv)
		}
		c.Embedder = &embeddings.Client{BaseURL: c.BaseURL, Model: c.Model, APIKey: key,
			HTTP: &http.Client{Timeout: time.Duration(c.TimeoutSeconds) * time.Second}}
	}
	return nil
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{memapi.ErrInvalid}, a...)...)
}

// Semantic is the hybrid-search feature: build it with New, attach it to
// one Service (memory.Config.Features), find it with Of. Safe for
// concurrent use once attached.
type Semantic struct {
	cfg   Config
	core  *memory.Core
	space string // the store's side space of this model's vectors

	queue    chan item
	overflow atomic.Bool // a change found the queue full: rescan
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	started  atomic.Bool
	stopOnce sync.Once

	ix atomic.Pointer[vector.Index] // nil until the first vector

	// have is the text hash behind each indexed vector; the worker's alone.
	have map[string]held

	qmu    sync.Mutex
	qcache map[string][]float32 // query text → vector, dropped whole when full

	omu      sync.Mutex
	onStored []func([]memory.MemoryKey) // OnStored's callbacks

	embedded, failures, dropped atomic.Int64
}

// New checks cfg and fills its defaults; a disabled Config gives a
// feature that registers nothing (search stays lexical). Errors wrap
// memapi.ErrInvalid and name the setting.
func New(cfg Config) (*Semantic, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Semantic{
		cfg: cfg, space: "emb:" + cfg.Model,
		queue: make(chan item, cfg.Queue), ctx: ctx, cancel: cancel, done: make(chan struct{}),
		have: map[string]held{}, qcache: map[string][]float32{},
	}, nil
}

// Of returns the feature attached to svc, or nil.
func Of(svc *memory.Service) *Semantic { return memory.FeatureOf[*Semantic](svc) }

// Attach registers the feature when it is enabled (memory.Feature).
func (s *Semantic) Attach(c *memory.Core) {
	s.core = c
	if s.cfg.Enabled {
		c.Register(s)
	}
}

// Config is the configuration in effect, defaults filled.
func (s *Semantic) Config() Config { return s.cfg }

var (
	_ memory.Feature        = (*Semantic)(nil)
	_ memory.ChangeObserver = (*Semantic)(nil)
	_ memory.Opener         = (*Semantic)(nil)
	_ memory.Ranker         = (*Semantic)(nil)
	_ memory.Closer         = (*Semantic)(nil)
)

// Opened starts the worker: it loads the stored vectors, embeds what has
// none for the current model, then follows the changes (memory.Opener).
func (s *Semantic) Opened() {
	s.started.Store(true)
	go s.run()
}

// Close stops the worker, cancelling an embedding request under way, and
// waits for it (memory.Closer). Vectors not yet stored are computed again
// at the next start.
func (s *Semantic) Close() {
	s.stopOnce.Do(func() {
		s.cancel()
		if s.started.Load() {
			<-s.done
		}
	})
}

// Changed queues the memories a write or a peer's delta touched
// (memory.ChangeObserver). It never blocks: when the queue is full the
// change is dropped and the worker rescans the store once it catches up.
func (s *Semantic) Changed(changes []store.Change) {
	for _, k := range s.core.Touched(changes) {
		select {
		case s.queue <- item{key: k}:
		default:
			s.dropped.Add(1)
			s.overflow.Store(true)
		}
	}
}

// Stats is what the feature has done since it started.
type Stats struct {
	Indexed  int   // vectors in the index
	Embedded int64 // texts embedded by the worker
	Failures int64 // failed embedding requests
	Dropped  int64 // changes not queued (queue full), left to a rescan
}

// Stats reports the feature's counters.
func (s *Semantic) Stats() Stats {
	st := Stats{Embedded: s.embedded.Load(), Failures: s.failures.Load(), Dropped: s.dropped.Load()}
	if ix := s.ix.Load(); ix != nil {
		st.Indexed = ix.Len()
	}
	return st
}

// Sync waits until the worker has handled every change queued before the
// call (and the rescan a full queue asked for), or ctx ends. Tests and
// benchmarks use it; it blocks while the queue is full.
func (s *Semantic) Sync(ctx context.Context) error {
	if !s.cfg.Enabled {
		return nil
	}
	done := make(chan struct{})
	select {
	case s.queue <- item{barrier: done}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
