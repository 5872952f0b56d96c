package convergence

// Validate checks in as Analyze does, without analysing it, and returns the first failure in
// document order as an *engine.InputError, or nil. It keeps the indexed input it builds
// (engine.Compiled), so that Analyze on the same value does not check and index it again.
func (in *Input) Validate() error { return in.checked.Validate(in.index) }

// validated is the checked and indexed input: Validate's, or built now.
func (in *Input) validated() (*input, error) { return in.checked.Get(in.index) }

func (in *Input) index() (*input, error) {
	v, err := validate(in)
	if err != nil {
		return nil, err
	}
	return v, nil
}
