package convergence

import "riskapi/engine"

// Validate checks in as Analyze does, without analysing it, and returns the first failure in
// document order as an *engine.InputError, or nil. It keeps the indexed input it builds
// (engine.Compiled), so that Analyze on the same value does not check and index it again.
func (in *Input) Validate() error { return in.checked.Validate(in.key(), in.index) }

// validated is the checked and indexed input: Validate's, or built now.
func (in *Input) validated() (*input, error) { return in.checked.Get(in.key(), in.index) }

// inputKey is what the indexed input was built from (see engine.Compiled).
type inputKey struct {
	marketID       string
	observations   engine.Slice[Observation]
	bids           engine.Slice[Bid]
	communications engine.Slice[Communication]
	benchmarks     *Benchmarks
	sensitivity    engine.Optional[float64]
}

func (in *Input) key() inputKey {
	return inputKey{
		marketID: in.MarketID, observations: engine.SliceOf(in.Observations), bids: engine.SliceOf(in.Bids),
		communications: engine.SliceOf(in.Communications), benchmarks: in.Benchmarks, sensitivity: engine.ValueOf(in.Sensitivity),
	}
}

func (in *Input) index() (*input, error) {
	v, err := validate(in)
	if err != nil {
		return nil, err
	}
	return v, nil
}
