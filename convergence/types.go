// Package convergence screens market outcomes (prices, costs, quantities, bids, segments and
// message metadata) for the statistical fingerprints of collusion, names the suspected
// group and period, and explains each signal. It is a pure engine: Analyze turns an Input
// into an Analysis, and Generate produces markets with known truth (including Q-learning
// pricing agents in the Calvano et al. 2020 market) for tests and test mode.
package convergence

import "riskapi/engine"

// MethodVersion identifies the method documented in docs/methods/convergence.md.
const MethodVersion = "convergence/1"

// DefaultSensitivity is the false-alarm level used when Input.Sensitivity is nil.
const DefaultSensitivity = 0.01

// Observation is one firm's price (and optionally cost, quantity and segment) in one period.
// Price is a pointer so that a missing price can be told from a zero one.
type Observation struct {
	Firm     string   `json:"firm"`
	Period   Period   `json:"period"`
	Price    *float64 `json:"price"`
	Cost     *float64 `json:"cost,omitempty"`
	Quantity *float64 `json:"quantity,omitempty"`
	Segment  string   `json:"segment,omitempty"`
}

// Bid is one firm's bid in one tender.
type Bid struct {
	Tender string   `json:"tender"`
	Firm   string   `json:"firm"`
	Amount *float64 `json:"amount"`
	Won    *bool    `json:"won"`
	Date   Period   `json:"date,omitzero"`
}

// Communication is the metadata of one message between two firms (or their agents).
type Communication struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Timestamp Period `json:"timestamp"`
}

// Benchmarks are the market model's reference prices and per-firm per-period profits.
type Benchmarks struct {
	CompetitivePrice  *float64 `json:"competitive_price,omitempty"`
	MonopolyPrice     *float64 `json:"monopoly_price,omitempty"`
	CompetitiveProfit *float64 `json:"competitive_profit,omitempty"`
	MonopolyProfit    *float64 `json:"monopoly_profit,omitempty"`
}

// Input is the request body of POST /v1/convergence/analyze-market.
type Input struct {
	MarketID       string          `json:"market_id"`
	Observations   []Observation   `json:"observations,omitempty"`
	Bids           []Bid           `json:"bids,omitempty"`
	Communications []Communication `json:"communications,omitempty"`
	Benchmarks     *Benchmarks     `json:"benchmarks,omitempty"`
	// Sensitivity is the false-alarm level in (0, 0.2]; nil means DefaultSensitivity.
	Sensitivity *float64 `json:"sensitivity,omitempty"`
	// Run tunes how Analyze and Validate run; it never changes the result and is not part
	// of the body.
	Run Options `json:"-"`

	// checked is what Validate built, so that Analyze does not check the input twice.
	checked engine.Compiled[inputKey, input]
}

// Error codes of the *engine.InputError values Analyze returns.
const (
	CodeInvalidMarketID       = "INVALID_MARKET_ID"
	CodeInvalidObservations   = "INVALID_OBSERVATIONS"
	CodeInvalidBids           = "INVALID_BIDS"
	CodeInvalidCommunications = "INVALID_COMMUNICATIONS"
	CodeInvalidBenchmarks     = "INVALID_BENCHMARKS"
	CodeInvalidSensitivity    = "INVALID_SENSITIVITY"
)

// Signal values of SuspectedGroup.Signals.
const (
	SignalLowPriceVariance       = "low_price_variance"
	SignalSupraCompetitiveMargin = "supra_competitive_margin"
	SignalParallelPricing        = "parallel_pricing"
	SignalLeaderFollower         = "leader_follower"
	SignalCoverBidding           = "cover_bidding"
	SignalBidRotation            = "bid_rotation"
	SignalMarketDivision         = "market_division"
	SignalCommunication          = "communication_before_price_changes"
)

// Reasons of FlaggedPeriod.Reason.
const (
	ReasonCollusiveRegime   = "collusive_regime"
	ReasonSupraCompetitive  = "supra_competitive_prices"
	ReasonRiggedTenders     = "rigged_tenders"
	ReasonMarketDivision    = "market_division"
	ReasonCoordinatedChange = "coordinated_price_changes"
)

// GroupEvidence holds the figures behind a suspected group; a figure that its inputs do not
// allow is nil.
type GroupEvidence struct {
	// ProfitGain is the group's own gain Δ over its period, on ProfitGainBasis.
	ProfitGain      *float64 `json:"profit_gain"`
	ProfitGainBasis *string  `json:"profit_gain_basis"`
	// PriceChange is the relative rise of the members' mean cost-adjusted price in the
	// period over the rest of the series (nil when the period is the whole series).
	PriceChange *float64 `json:"price_change"`
	// VarianceRatio is the members' mean variance of cost-adjusted price changes in the
	// period over that outside it (nil when the period is the whole series).
	VarianceRatio *float64 `json:"variance_ratio"`
	// MeanPairwiseCorrelation of the members' cost-adjusted price changes over the period.
	MeanPairwiseCorrelation *float64 `json:"mean_pairwise_correlation"`
	// FlaggedTenders is the number of flagged tenders in which members bid.
	FlaggedTenders int `json:"flagged_tenders"`
	// PrecededPriceChanges is the number of the members' coordinated price changes
	// preceded by a message between them.
	PrecededPriceChanges int `json:"preceded_price_changes"`
	// PValue is the family-wise adjusted p-value behind Confidence (1 − PValue).
	PValue float64 `json:"p_value"`
	// Members is each bid-ring member's own evidence, in the order of Firms; empty for
	// groups without bids.
	Members []MemberEvidence `json:"members"`
}

// MemberEvidence is one bid-ring member's part in the ring's tenders: the tenders where it
// and another member bid, those it won among the members (its bid the members' lowest) and
// those it covered (another member's bid lower), and CoverZ, Stouffer's Z of the ring's
// cover screen over the tenders it won with at least two members' covers (null when none).
type MemberEvidence struct {
	Firm    string   `json:"firm"`
	Tenders int      `json:"tenders"`
	Won     int      `json:"won"`
	Covered int      `json:"covered"`
	CoverZ  *float64 `json:"cover_z"`
}

// SuspectedGroup is a set of firms whose behaviour clusters, with the period and signals.
type SuspectedGroup struct {
	Firms      []string      `json:"firms"`
	Confidence float64       `json:"confidence"`
	From       *Period       `json:"from"`
	To         *Period       `json:"to"`
	Signals    []string      `json:"signals"`
	Evidence   GroupEvidence `json:"evidence"`
}

// LeaderFollower is a pair of firms where the follower's cost-adjusted price changes
// repeat the leader's Lag periods later; Strength is their lagged correlation.
type LeaderFollower struct {
	Leader   string  `json:"leader"`
	Follower string  `json:"follower"`
	Lag      int     `json:"lag"`
	Strength float64 `json:"strength"`
}

// PriceConvergence is the variance screen, parallelism and regime dimension.
type PriceConvergence struct {
	Score                   float64          `json:"score"`
	CoefficientOfVariation  *float64         `json:"coefficient_of_variation"`
	MeanPairwiseCorrelation *float64         `json:"mean_pairwise_correlation"`
	SynchronizedChangeRate  *float64         `json:"synchronized_change_rate"`
	LeaderFollower          []LeaderFollower `json:"leader_follower"`
}

// ConsumerWelfare compares prices and profits with the benchmarks.
type ConsumerWelfare struct {
	Score           float64  `json:"score"`
	ProfitGain      *float64 `json:"profit_gain"`
	ProfitGainBasis *string  `json:"profit_gain_basis"`
	MeanMarkup      *float64 `json:"mean_markup"`
	CostPassThrough *float64 `json:"cost_pass_through"`
}

// BidPatterns holds the tender screens.
type BidPatterns struct {
	Score                  float64  `json:"score"`
	Tenders                int      `json:"tenders"`
	FlaggedTenders         int      `json:"flagged_tenders"`
	FlaggedTenderIDs       []string `json:"flagged_tender_ids"`
	CoefficientOfVariation *float64 `json:"coefficient_of_variation"`
	RelativeDistance       *float64 `json:"relative_distance"`
	PercentageDifference   *float64 `json:"percentage_difference"`
	Kurtosis               *float64 `json:"kurtosis"`
	Skewness               *float64 `json:"skewness"`
	RotationIndex          *float64 `json:"rotation_index"`
}

// MarketDivision measures how firms split segments.
type MarketDivision struct {
	Score               float64 `json:"score"`
	SegmentHHI          float64 `json:"segment_hhi"`
	AllocationStability float64 `json:"allocation_stability"`
}

// CommunicationDimension relates messages to coordinated price changes.
type CommunicationDimension struct {
	Score float64 `json:"score"`
	// MessagesBeforePriceChanges counts the messages between two firms of a coordinated
	// price change sent just before it (after period t − 2, at or before period t).
	MessagesBeforePriceChanges int `json:"messages_before_price_changes"`
	// CoordinatedChanges is the number of periods in which at least two firms changed
	// their cost-adjusted price materially in the same direction.
	CoordinatedChanges int `json:"coordinated_changes"`
	// PrecededChanges of them had at least one such message.
	PrecededChanges int `json:"preceded_changes"`
	// ExpectedMessages is the mean count over all circular shifts of the message timeline:
	// what to expect if messages ignored price changes.
	ExpectedMessages float64 `json:"expected_messages"`
}

// Dimensions holds one entry per dimension; nil when its inputs are absent.
type Dimensions struct {
	PriceConvergence *PriceConvergence       `json:"price_convergence"`
	ConsumerWelfare  *ConsumerWelfare        `json:"consumer_welfare"`
	BidPatterns      *BidPatterns            `json:"bid_patterns"`
	MarketDivision   *MarketDivision         `json:"market_division"`
	Communication    *CommunicationDimension `json:"communication"`
}

// FlaggedPeriod is a stretch of the series in a suspected collusive regime.
type FlaggedPeriod struct {
	From   *Period `json:"from"`
	To     *Period `json:"to"`
	Reason string  `json:"reason"`
	// Firms are the members of the group the period belongs to.
	Firms []string `json:"firms"`
}

// Analysis is the result of Analyze: the analysis object minus the fields the HTTP layer
// adds (id, object, livemode, created_at).
type Analysis struct {
	MarketID             string           `json:"market_id"`
	CollusionDetected    bool             `json:"collusion_detected"`
	Score                float64          `json:"score"`
	RiskBand             string           `json:"risk_band"`
	Confidence           float64          `json:"confidence"`
	RecommendedAction    string           `json:"recommended_action"`
	SuspectedGroups      []SuspectedGroup `json:"suspected_groups"`
	Dimensions           Dimensions       `json:"dimensions"`
	FlaggedPeriods       []FlaggedPeriod  `json:"flagged_periods"`
	FirmsAnalyzed        int              `json:"firms_analyzed"`
	ObservationsAnalyzed int              `json:"observations_analyzed"`
	BidsAnalyzed         int              `json:"bids_analyzed"`
	MethodVersion        string           `json:"method_version"`
}
