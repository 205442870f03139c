package node

import (
	"context"
	"time"
)

// SweepInterval is how often the node collects expired capsules it created
// (their records are retracted, which replicates). Expired capsules are
// unreadable from the moment they expire whatever the sweep does; the sweep
// only reclaims space.
const SweepInterval = time.Minute

// housekeep runs periodic maintenance until ctx is done.
func (n *Node) housekeep(ctx context.Context) {
	t := time.NewTicker(SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if k, err := n.svc.SweepCapsules(); err != nil {
				n.log.Warn("capsule sweep", "err", err)
			} else if k > 0 {
				n.log.Info("expired capsules collected", "count", k)
			}
		}
	}
}
