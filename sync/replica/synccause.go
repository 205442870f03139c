package replica

import "github.com/mnemohq/mnemo/sync/wire"

// Why digest syncs are asked for: each namespace of a sync request is
// counted by the cause that asked for it (SyncStats), and the content an
// answer brings by the cause of the request it answers, so a run can
// tell which part of the engine its sync traffic comes from (mnemo sim
// prints them).

// SyncCause is why a namespace's digest sync was asked of a peer.
type SyncCause uint8

// The causes, in SyncStats' order.
const (
	causeNone        SyncCause = iota
	CauseJoin                  // the peer joined or restarted
	CauseNewReader             // the peer has just become a reader (a grant, a binding)
	CauseOverflow              // the peer's queue overflowed
	CauseAckTimeout            // a batch unacknowledged after AckTimeout
	CauseRetry                 // an owed answer asked for again
	CauseAntiEntropy           // the random reader of an anti-entropy round
	CauseAuthority             // a live delta refused for want of its author's grant
	CauseTreeRepair            // a relayed delta held or refused: its author asked
	CauseHeld                  // a held delta dropped from a full pending buffer, or refused once released
	CauseRequested             // RequestSync (catch-up)
	CauseReverse               // a requester's context held dots this node lacks (its answer owed)
	CauseGap                   // a reader's context held dots this node lacks: a writer asked (gap.go)
	CauseHeal                  // a tree link spoke again after a silence: a partition healed (gap.go)
	CauseGaveUp                // a tree gave up a payload this peer announced (gap.go)
	CauseSpread                // content a sync brought, told to the tree's links (gap.go)
	NumSyncCauses
)

var causeNames = [NumSyncCauses]string{"", "join", "new reader", "overflow", "ack timeout", "retry",
	"anti-entropy", "authority", "tree repair", "held", "requested", "reverse", "gap", "heal", "gave up", "spread"}

func (c SyncCause) String() string {
	if c < NumSyncCauses {
		return causeNames[c]
	}
	return "unknown"
}

// SyncStats counts the engine's digest syncs by cause.
type SyncStats struct {
	// Asked: namespaces asked for in sync requests sent, by cause.
	Asked [NumSyncCauses]uint64 `json:"asked"`
	// Answers and AnswerBytes: namespace deltas received in sync answers
	// to those requests, and their bytes, by the request's cause.
	Answers     [NumSyncCauses]uint64 `json:"answers"`
	AnswerBytes [NumSyncCauses]uint64 `json:"answer_bytes"`
	// Unasked, UnaskedBytes: those of answers no request of this node's
	// was owed for (a requester sending what this node's context lacked).
	Unasked      uint64 `json:"unasked"`
	UnaskedBytes uint64 `json:"unasked_bytes"`
	// HealProbes: probes of a silence on a tree's link, each a tree
	// announcing again to a peer heard again after it some of what went
	// to it during it (gap.go); a silence with nothing to announce again
	// is none.
	HealProbes uint64 `json:"heal_probes"`
	// Heals: trees' links that lost payloads in such a silence (the peer
	// asked for some of those announced again): a partition healed.
	Heals uint64 `json:"heals"`
	// Deltas refused for their writer's right and held for it
	// (writerhold.go): held, then passed once it came, dropped when
	// their time was up, or pushed out of the full buffer (the last two
	// asked for again).
	WriterHeld     uint64 `json:"writer_held"`
	WriterReleased uint64 `json:"writer_released"`
	WriterExpired  uint64 `json:"writer_expired"`
	WriterEvicted  uint64 `json:"writer_evicted"`
}

// Add adds o's counters to s.
func (s *SyncStats) Add(o SyncStats) {
	for i := range s.Asked {
		s.Asked[i] += o.Asked[i]
		s.Answers[i] += o.Answers[i]
		s.AnswerBytes[i] += o.AnswerBytes[i]
	}
	s.Unasked += o.Unasked
	s.UnaskedBytes += o.UnaskedBytes
	s.HealProbes += o.HealProbes
	s.Heals += o.Heals
	s.WriterHeld += o.WriterHeld
	s.WriterReleased += o.WriterReleased
	s.WriterExpired += o.WriterExpired
	s.WriterEvicted += o.WriterEvicted
}

// needSyncOf marks ns to be synced with p for cause, keeping the cause
// already there if any.
func needSyncOf(p *peerState, ns string, cause SyncCause) {
	if p.needSync[ns] == causeNone {
		p.needSync[ns] = cause
	}
}

// countAnswer counts a namespace delta of a sync answer from p by the
// cause of the request it answers.
func (e *Engine) countAnswer(p *peerState, nd wire.NamespaceDelta) {
	a, ok := p.asked[nd.Namespace]
	e.syncContent(nd.Namespace, a.cause)
	if !ok {
		e.syncStats.Unasked++
		e.syncStats.UnaskedBytes += uint64(len(nd.Delta))
		return
	}
	e.syncStats.Answers[a.cause]++
	e.syncStats.AnswerBytes[a.cause] += uint64(len(nd.Delta))
}

// SyncStats returns the digest syncs' counters.
func (e *Engine) SyncStats() SyncStats { return e.syncStats }
