package epidemic

import (
	"math/rand/v2"
	"testing"
)

// simSeed is the seed of the measured simulations; a failure names it.
const simSeed = 1

// TestOverlay100 and TestOverlay1000 build overlays, measure them, and
// assert what a user would notice: bounded connections, every broadcast
// everywhere, about one payload send per node once the tree settles, a
// broadcast as fast as the epidemic model under loss, and full delivery
// again after a share of the nodes die.
func TestOverlay100(t *testing.T) { testOverlay(t, 100) }

func TestOverlay1000(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 nodes: not in -short")
	}
	testOverlay(t, 1000)
}

func testOverlay(t *testing.T, n int) {
	s := newSim(t, simSeed, nil)
	s.build(n, 5, 300, simSeed, nil)
	bound := s.nodes[0].Config().ActiveSize
	maxV, meanV := s.viewSizes()
	t.Logf("N=%d seed=%d: active view max %d mean %.2f (bound %d), asymmetric links %d, connected %v",
		n, simSeed, maxV, meanV, bound, s.asymmetric(), s.connected())
	if maxV > bound {
		t.Errorf("an active view of %d, bound %d", maxV, bound)
	}
	if !s.connected() {
		t.Fatalf("overlay not connected")
	}

	// Broadcasts come from a set of writers (as a namespace's are): each
	// writer's tree settles after its first few broadcasts.
	writers := max(5, n/50)
	s.pickWriters(writers)
	first := s.measure(writers, 30, 0)
	t.Logf("first broadcast of each of %d writers, no loss: %v", writers, first)
	s.measure(5*writers, 30, 0)
	stable := s.measure(20, 30, 0)
	t.Logf("20 broadcasts after %d more, no loss:  %v", 5*writers, stable)
	if stable.reachedAll != stable.casts {
		t.Errorf("without loss, %d of %d broadcasts reached every node", stable.reachedAll, stable.casts)
	}
	if stable.payloadRatio > 1.3 {
		t.Errorf("payload sends per broadcast %.3f·(N−1), want ≤ 1.3", stable.payloadRatio)
	}
	if stable.bytesRatio > 1.3 {
		t.Errorf("bytes per broadcast %.3f·(N−1) payload messages of 1 KiB, announcements included, want ≤ 1.3", stable.bytesRatio)
	}
	// Announcements cost the same whatever the payload: relative to a
	// small payload they weigh more.
	kib := s.payload
	s.payload = make([]byte, 256)
	t.Logf("20 broadcasts of 256-byte payloads: %v", s.measure(20, 30, 0))
	s.payload = kib

	lossy := s.measure(20, 40, 0.1)
	epi := epidemicRounds(rand.New(rand.NewPCG(simSeed, 2)), n, 0.1, 50)
	t.Logf("20 broadcasts, 10%% loss:      %v", lossy)
	t.Logf("epidemic model, 10%% loss: %.1f rounds to 99.99%%; Plumtree mean/model %.2f",
		epi, lossy.roundsMean/epi)
	if lossy.roundsMean > 1.2*epi {
		t.Errorf("rounds to 99.99%% under 10%% loss %.1f, epidemic model %.1f: want ≤ 1.2×", lossy.roundsMean, epi)
	}

	for _, frac := range []float64{0.1, 0.3} {
		live := s.live()
		s.kill(frac)
		first := s.measure(3, 40, 0)
		s.run(100) // a passive view refills what the broadcasts did not
		maxV, meanV := s.viewSizes()
		after := s.measure(10, 30, 0)
		t.Logf("killed %.0f%% of %d: first 3 broadcasts: %v", 100*frac, live, first)
		t.Logf("  then active view max %d mean %.2f, connected %v; 10 broadcasts: %v",
			maxV, meanV, s.connected(), after)
		if after.reachedAll != after.casts {
			t.Errorf("after killing %.0f%%: %d of %d broadcasts reached every live node", 100*frac, after.reachedAll, after.casts)
		}
	}
	if s.dupes > 0 {
		t.Errorf("%d payloads delivered twice", s.dupes)
	}
}
