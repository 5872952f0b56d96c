// Package admission bounds what requests may take of one process at once (platform contract
// §11): how many product requests one account runs concurrently, and how much memory the
// heavy requests of every account hold together. Both are per process: each process of a
// deployment protects its own cores and memory.
package admission

import "sync"

// DefaultPerAccount is the contract's default: at most 4 product requests of one account
// run at once in a process, so one tenant cannot take every core.
const DefaultPerAccount = 4

// Accounts counts the product requests each account has running.
type Accounts struct {
	limit   int
	mu      sync.Mutex
	running map[string]int
}

// NewAccounts returns counters allowing limit concurrent requests per account; zero or
// less means DefaultPerAccount.
func NewAccounts(limit int) *Accounts {
	if limit <= 0 {
		limit = DefaultPerAccount
	}
	return &Accounts{limit: limit, running: map[string]int{}}
}

// Limit is the number of concurrent requests allowed per account.
func (a *Accounts) Limit() int { return a.limit }

// Enter counts one more running request of account and returns the function that ends it;
// ok is false, and nothing is counted, when the account already runs Limit requests.
func (a *Accounts) Enter(account string) (leave func(), ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running[account] >= a.limit {
		return nil, false
	}
	a.running[account]++
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.running[account]--; a.running[account] == 0 {
				delete(a.running, account)
			}
		})
	}, true
}
