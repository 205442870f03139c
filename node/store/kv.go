package store

import "errors"

// KV is the ordered key-value storage under a Store: Badger on a node
// (package badgerkv), MemKV in the simulator and in tests that crash a
// node. The
// Store holds all the replication logic; a KV only keeps bytes. Methods
// are safe for concurrent use; a Store serialises its writers itself.
type KV interface {
	// View runs fn over one consistent snapshot. fn may call View again
	// (a nested snapshot) but must not call Update.
	View(fn func(r Reader) error) error
	// Update runs fn in a read-write transaction whose Get sees its own writes
	// and is committed atomically when fn returns nil — durably, before
	// Update returns, unless the KV was opened without syncing. It returns
	// ErrTxnTooBig when the transaction exceeds what the KV commits at once.
	Update(fn func(w Writer) error) error
	// Close releases the KV; later calls fail.
	Close() error
}

// Syncer is a KV whose commits can be made durable apart from their
// transactions, so that one sync covers several commits and the next
// commit need not wait for the last one's sync (group.go). The Store
// commits its groups so when its KV is one, and syncs them itself;
// without it every group is an Update, durable when it returns.
type Syncer interface {
	// UpdateNoSync is Update without the sync: once it returns the
	// transaction is committed (later transactions and Views see it) but
	// not durable; a crash may lose it until a Sync begun after it
	// returns.
	UpdateNoSync(fn func(w Writer) error) error
	// Sync makes durable every transaction committed before it was
	// called. Safe to call from any goroutine, concurrently with commits.
	// After an error nothing is known of what is durable: the Store
	// refuses every later write.
	Sync() error
}

// Reader reads a snapshot.
type Reader interface {
	// Get returns the value of key (the caller may keep it), or
	// ErrKeyNotFound.
	Get(key []byte) ([]byte, error)
	// Iterate calls fn for every key with prefix, in key order; key and
	// value are valid only during the call.
	Iterate(prefix []byte, fn func(key, value []byte) error) error
	// IterateFrom is Iterate starting at the first key with prefix that
	// is not below start (start need not exist; one below prefix starts
	// at prefix). An error from fn stops the walk and is returned: the
	// Store stops a walk early that way.
	IterateFrom(prefix, start []byte, fn func(key, value []byte) error) error
}

// ValueLender is a Reader that can lend a value instead of copying it:
// GetFunc calls fn with the value of key, valid only during the call, or
// returns ErrKeyNotFound without calling fn; an error from fn is
// returned. The Store reads a search's hits so (EachRecordView): Badger's
// Get copies every value once more than its Item.Value does.
type ValueLender interface {
	GetFunc(key []byte, fn func(value []byte) error) error
}

// Writer is a Reader that also writes.
type Writer interface {
	Reader
	Set(key, value []byte) error
	Delete(key []byte) error
}

// Errors of a KV.
var (
	ErrKeyNotFound = errors.New("store: key not found")
	ErrTxnTooBig   = errors.New("store: transaction too big")
	ErrClosed      = errors.New("store: closed")
	// ErrSync wraps a failed sync: the writes it was to make durable
	// were not acknowledged, and the Store refuses every write after it
	// (what is on disk is unknown: reopen the store).
	ErrSync = errors.New("store: sync failed")
	// ErrAborted is what a write returns when a write built before it
	// failed to commit (its state was built over that write's); the error
	// also wraps that failure. Nothing of it was written: retry it.
	ErrAborted = errors.New("store: aborted: a write before it failed to commit")
	// ErrLocked is what opening a KV's storage returns when another
	// process holds it (badgerkv.Open: the data directory's lock); the
	// message names the holder.
	ErrLocked = errors.New("store: data directory in use")
)
