package node

import (
	"fmt"
	"path/filepath"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/dedup"
)

// access is the node's identity, settings, local principals and tokens.
//
// Order in Open: the key file and config.json are read (never written)
// before the memory Service takes the directory lock, because the replica
// id and principal rules go into memory.Config; a missing key is generated
// then and written (mode 0600) only once the lock is held, as is anything
// written to tokens.json.
type access struct {
	id       acl.Identity
	newKey   bool
	settings Settings
	resolver *namespace.Resolver
	dedup    *dedup.Dedup // built from settings.Duplicates; attached by features
	locals   *principals
	// onNewPrincipal runs when a principal joins locals (set by replication).
	onNewPrincipal func()
	// hostedElsewhere reports the node that hosts a principal when it is
	// not this one (set by replication; nil on a single node).
	hostedElsewhere func(namespace.Address) (acl.NodeID, bool)
	tokens          *tokens
}

func prepareAccess(dir string, owner namespace.Address) (*access, error) {
	settings, resolver, dd, err := loadSettings(dir, owner)
	if err != nil {
		return nil, err
	}
	id, existed, err := loadIdentity(dir)
	if err != nil {
		return nil, err
	}
	return &access{id: id, newKey: !existed, settings: settings, resolver: resolver, dedup: dd,
		locals: newPrincipals(owner, settings.PrincipalRules)}, nil
}

// memoryConfig adds the access fields to the Service's configuration.
func (ac *access) memoryConfig(mc memory.Config) memory.Config {
	mc.Identity = ac.id
	mc.Replica = ac.id.ReplicaID()
	mc.IsLocal = ac.locals.Has
	mc.AutoPromote = ac.settings.AutoPromote
	return mc
}

// start runs once the directory lock is held: it writes a new key and
// loads the tokens, whose principals become local.
func (ac *access) start(n *Node) error {
	if ac.newKey {
		if err := saveIdentity(n.cfg.Dir, ac.id); err != nil {
			return err
		}
		n.log.Info("wrote a new node key", "file", filepath.Join(n.cfg.Dir, KeyFile), "node_id", ac.id.NodeID())
	}
	t, err := loadTokens(n.cfg.Dir, n.cfg.Now)
	if err != nil {
		return err
	}
	ac.tokens = t
	for _, p := range t.Principals() {
		ac.locals.Add(p)
	}
	ac.locals.mu.Lock()
	ac.locals.onAdd = n.svc.RefreshPolicy
	ac.locals.mu.Unlock()
	n.svc.RefreshPolicy()
	return nil
}

// issuer is the httpapi.Tokens of the node: issuing a token makes its
// principal local.
type issuer struct{ ac *access }

func (i issuer) Lookup(tok string) (namespace.Address, bool) { return i.ac.tokens.Lookup(tok) }

// Issue refuses a principal that another node of the cluster hosts (a
// verified binding names its key): a token here would let this node pose as
// it. An unbound principal becomes local and this node claims it.
func (i issuer) Issue(p namespace.Address) (string, error) {
	if h := i.ac.hostedElsewhere; h != nil {
		if host, ok := h(p); ok {
			return "", fmt.Errorf("%w: %s is hosted by node %s; this node may not issue tokens for it", memory.ErrConflict, p, host)
		}
	}
	tok, err := i.ac.tokens.Issue(p)
	if err != nil {
		return "", err
	}
	i.ac.addPrincipal(p)
	return tok, nil
}

// addPrincipal records a local principal; a new one is advertised to the
// cluster (replication sets onNewPrincipal).
func (a *access) addPrincipal(p namespace.Address) {
	if a.locals.Add(p) && a.onNewPrincipal != nil {
		a.onNewPrincipal()
	}
}

// Identity is the node's key pair (DIR/node.key).
func (n *Node) Identity() acl.Identity { return n.access.id }

// NodeID is the node's id, derived from its public key.
func (n *Node) NodeID() acl.NodeID { return n.access.id.NodeID() }

// Principals lists the node's local principals: the owner agent, those
// named by principal rules, those tokens are bound to, and those session
// keys have resolved to since start. They are bound to the node's key.
func (n *Node) Principals() []namespace.Address { return n.access.locals.List() }

// Settings is the content of the data directory's config.json.
func (n *Node) Settings() Settings { return n.access.settings }
