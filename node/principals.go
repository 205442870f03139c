package node

import (
	"slices"
	"strings"
	"sync"

	"github.com/mnemohq/mnemo/namespace"
)

// principals is the set of the node's local principals: the owner agent,
// every principal a static session rule names, every principal a token is
// bound to, and every principal a session key has resolved to since start
// (regex rules can produce names nobody listed). They are bound to the
// node's key; replication advertises them. Safe for concurrent use.
type principals struct {
	mu  sync.RWMutex
	set map[namespace.Address]bool
	// onAdd is called, outside the lock, after a principal is added, so
	// the memory Service can re-evaluate its policy.
	onAdd func()
}

func newPrincipals(owner namespace.Address, rules []namespace.Rule) *principals {
	p := &principals{set: map[namespace.Address]bool{owner: true}}
	for _, r := range rules {
		if r.Mode == namespace.ModeRegex && strings.Contains(r.Principal, "$") {
			continue // known only once a session key expands it
		}
		if a, err := namespace.ParsePrincipal(r.Principal); err == nil {
			p.set[a] = true
		}
	}
	return p
}

// Has reports whether a is a local principal.
func (p *principals) Has(a namespace.Address) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.set[a]
}

// Add makes a local; it reports whether a was new.
func (p *principals) Add(a namespace.Address) bool {
	p.mu.Lock()
	added := !p.set[a]
	p.set[a] = true
	onAdd := p.onAdd
	p.mu.Unlock()
	if added && onAdd != nil {
		onAdd()
	}
	return added
}

// List returns the local principals, sorted.
func (p *principals) List() []namespace.Address {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]namespace.Address, 0, len(p.set))
	for a := range p.set {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b namespace.Address) int { return strings.Compare(a.String(), b.String()) })
	return out
}
