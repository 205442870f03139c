package dedup

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mnemohq/mnemo/node/embeddings"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/semantic"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/similarity"
)

// Defaults and bounds.
const (
	DefaultThreshold           = 0.8 // MinHash Jaccard estimate
	DefaultEmbeddingsThreshold = 0.9 // cosine
	ConsensusBoost             = 0.2 // confidence added when independent agents agree
	defaultEmbeddingsTimeout   = 30 * time.Second
	maxCandidates              = 10000 // memories compared per request
	maxEmbedCandidates         = 2000
	maxMergeIDs                = 20
	maxVectorDups              = 10   // nearest vectors a check on save considers
	maxEmbedRunes              = 8000 // of one text sent to the embedder
	embedBatch                 = 64   // texts per Embed call
)

// Config configures duplicate detection (the node's DIR/config.json
// "duplicates"). The zero value is MinHash only at DefaultThreshold.
type Config struct {
	// Threshold is the MinHash Jaccard estimate at which two memories are
	// near-duplicates, in (0, 1]; default 0.8. A query may set its own.
	Threshold  float64          `json:"threshold,omitempty"`
	Embeddings EmbeddingsConfig `json:"embeddings,omitzero"`
	// Embedder computes the vectors of the embeddings pass. Default: when
	// Embeddings.Enabled, a node/embeddings client of that endpoint (built
	// by New, so once); otherwise none and no embeddings pass. Tests and
	// embedders in process set it directly.
	Embedder Embedder `json:"-"`
	// OnSave configures merging on save; on by default.
	OnSave OnSaveConfig `json:"on_save,omitzero"`
}

// EmbeddingsConfig configures an OpenAI-compatible embeddings endpoint.
type EmbeddingsConfig struct {
	Enabled bool   `json:"enabled"`
	BaseURL string `json:"base_url,omitempty"` // e.g. http://127.0.0.1:11434/v1; POST {base_url}/embeddings
	Model   string `json:"model,omitempty"`
	// APIKeyEnv names the environment variable holding the bearer key
	// (the key itself never sits in config.json); "" sends none.
	APIKeyEnv      string  `json:"api_key_env,omitempty"`
	Threshold      float64 `json:"threshold,omitempty"`       // cosine, in (0, 1]; default 0.9
	TimeoutSeconds int     `json:"timeout_seconds,omitempty"` // per request; default 30
}

// Embedder turns texts into vectors, one per text, in order; the
// embeddings pass of Find compares them by cosine similarity. Embed may
// block (a network round trip) until ctx ends; it is called from
// concurrent requests, so it must be safe for concurrent use. An error
// skips the pass with a warning.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float64, error)
}

var _ Embedder = (*embeddings.Client)(nil)

// validate checks the configuration, fills its defaults and builds the
// default Embedder (errors wrap memapi.ErrInvalid). A configuration that
// already holds an Embedder keeps it, so validating twice builds nothing.
func (d *Config) validate() error {
	if d.Threshold == 0 {
		d.Threshold = DefaultThreshold
	}
	if d.Threshold <= 0 || d.Threshold > 1 {
		return invalid("duplicates.threshold must be in (0, 1], got %v", d.Threshold)
	}
	if err := d.OnSave.validate(); err != nil {
		return err
	}
	e := &d.Embeddings
	if !e.Enabled && d.Embedder == nil {
		return nil
	}
	if e.Enabled && !strings.HasPrefix(e.BaseURL, "http://") && !strings.HasPrefix(e.BaseURL, "https://") {
		return invalid("duplicates.embeddings.base_url must be an http(s) URL, got %q", e.BaseURL)
	}
	if e.Enabled && e.Model == "" {
		return invalid("duplicates.embeddings.model is required")
	}
	if e.Threshold == 0 {
		e.Threshold = DefaultEmbeddingsThreshold
	}
	if e.Threshold <= 0 || e.Threshold > 1 {
		return invalid("duplicates.embeddings.threshold must be in (0, 1], got %v", e.Threshold)
	}
	if e.TimeoutSeconds < 0 {
		return invalid("duplicates.embeddings.timeout_seconds must not be negative")
	}
	if d.Embedder == nil {
		d.Embedder = newEmbeddingsClient(*e)
	}
	return nil
}

// newEmbeddingsClient builds the default Embedder of cfg (the key from the
// environment variable it names, read once).
func newEmbeddingsClient(cfg EmbeddingsConfig) *embeddings.Client {
	timeout := time.Duration(cfg.TimeoutSeconds) * time.Second
	if timeout == 0 {
		timeout = defaultEmbeddingsTimeout
	}
	key := ""
	if cfg.APIKeyEnv != "" {
		key = os.Getenv(cfg.APIKeyEnv)
	}
	return &embeddings.Client{BaseURL: cfg.BaseURL, Model: cfg.Model, APIKey: key, HTTP: &http.Client{Timeout: timeout}}
}

// Dedup is the duplicate-detection feature: build it with New, attach it
// to one Service (memory.Config.Features), then find it with Of. Its
// caches of signatures and vectors are keyed by content, so they never go
// stale; they are dropped whole when they grow past a bound. Safe for
// concurrent use once attached.
type Dedup struct {
	cfg  Config
	core *memory.Core

	mu   sync.Mutex
	sigs map[string]similarity.Signature // cacheKey → MinHash signature
	vecs map[string][]float64            // cacheKey → embedding

	save *saveQueue // nil: merging on save is off
	// sem is the hybrid-search feature whose vectors merging on save
	// compares too; nil when it is off. Set by Opened, before the worker.
	sem *semantic.Semantic
}

// New checks cfg, fills its defaults and builds its Embedder, once, for
// the feature's life. Errors wrap memapi.ErrInvalid and name the setting.
func New(cfg Config) (*Dedup, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := &Dedup{cfg: cfg}
	if !cfg.OnSave.Disabled {
		d.save = newSaveQueue(cfg.OnSave.QueueSize)
	}
	return d, nil
}

// Of returns the dedup feature attached to svc, or nil.
func Of(svc *memory.Service) *Dedup { return memory.FeatureOf[*Dedup](svc) }

// Attach keeps the core (memory.Feature). Dedup owns no record kind;
// with merging on save on, it registers as a SentObserver (to queue what
// changed), an Opener (to start its worker) and a Closer (to stop it).
func (d *Dedup) Attach(c *memory.Core) {
	d.core = c
	if d.save != nil {
		c.Register(d)
	}
}

var (
	_ memory.Feature      = (*Dedup)(nil)
	_ memory.SentObserver = (*Dedup)(nil)
	_ memory.Opener       = (*Dedup)(nil)
	_ memory.Closer       = (*Dedup)(nil)
)

// Config is the configuration in effect, defaults filled.
func (d *Dedup) Config() Config { return d.cfg }

// text is what detection compares: the title and the content.
func text(m memory.Memory) string { return m.Title + "\n" + m.Content }

// cacheKey names a memory's text in the caches.
func cacheKey(m memory.Memory) string { return schema.ContentHash(text(m)) }

// signature is m's MinHash signature, cached by text.
func (d *Dedup) signature(m memory.Memory) similarity.Signature {
	k := cacheKey(m)
	d.mu.Lock()
	sig, ok := d.sigs[k]
	d.mu.Unlock()
	if ok {
		return sig
	}
	sig = similarity.MinHash(text(m))
	d.mu.Lock()
	if d.sigs == nil || len(d.sigs) >= maxCandidates { // one request's worth: 10 MiB
		d.sigs = map[string]similarity.Signature{}
	}
	d.sigs[k] = sig
	d.mu.Unlock()
	return sig
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{memapi.ErrInvalid}, a...)...)
}
