package node

import (
	"context"
	"time"

	"github.com/mnemohq/mnemo/node/memory/capsule"
)

// SweepInterval is how often the node collects expired capsules it created
// (their records are retracted, which replicates), removes group and other
// access from files the store created (perms.go) and takes the pages of
// Badger's mapped tables out of the process's resident set (they stay
// in the kernel's page cache). Expired capsules are
// unreadable from the moment they expire whatever the sweep does; the sweep
// only reclaims space. File pages are reclaimable anyway; unmapping them
// keeps an idle sidecar's resident size near its own memory (and searches
// hand them back sooner past FilePagesBudget: pages.go).
const SweepInterval = time.Minute

// housekeep runs periodic maintenance until ctx is done.
func (n *Node) housekeep(ctx context.Context) {
	n.pages.handBack() // what start-up alone touched: pages.go
	t := time.NewTicker(SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n.pages.handBack()
			n.tightenQuietly()
			n.sweepCapsules()
		}
	}
}

// sweepCapsules collects the expired capsules this node wrote.
func (n *Node) sweepCapsules() {
	caps := capsule.Of(n.svc)
	if caps == nil {
		return
	}
	if k, err := caps.Sweep(); err != nil {
		n.log.Warn("capsule sweep", "err", err)
	} else if k > 0 {
		n.log.Info("expired capsules collected", "count", k)
	}
}
