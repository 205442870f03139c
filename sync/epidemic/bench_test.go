package epidemic

import "testing"

// BenchmarkBroadcast1000 is one broadcast through a settled 1,000-node
// overlay (20 writers), every node's engine work included: the rounds
// until every node has it and nothing is left to send. It reports the
// payload sends per node and the rounds taken.
func BenchmarkBroadcast1000(b *testing.B) {
	s := newSim(b, simSeed, nil)
	s.build(1000, 5, 300, simSeed, nil)
	s.pickWriters(20)
	s.measure(120, 30, 0)
	var sends, rounds, casts int
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		sent := s.sent[KindGossip]
		c := s.broadcast()
		for r := 0; r < 60 && (c.count < len(s.nodes) || len(s.queue) > 0); r++ {
			s.step()
		}
		sends += s.sent[KindGossip] - sent
		rounds += c.done
		casts++
	}
	b.ReportMetric(float64(sends)/float64(casts*(len(s.nodes)-1)), "sends/(N-1)")
	b.ReportMetric(float64(rounds)/float64(casts), "rounds")
}
