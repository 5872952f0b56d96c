package convergence

// Validate checks in as Analyze does, without analysing it, and returns the first failure in
// document order as an *InputError, or nil. The HTTP layer calls it so that invalid requests
// are refused before anything runs or is stored.
func (in *Input) Validate() error {
	if _, err := validate(in); err != nil {
		return err
	}
	return nil
}
