package polite_test

import (
	"testing"

	"github.com/polite-go/polite"
	"github.com/polite-go/polite/adaptive"
	"github.com/polite-go/polite/breaker"
	"github.com/polite-go/polite/storetest"
)

func TestLocalStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c storetest.Config) (polite.Store, *polite.Registry) {
		reg := &polite.Registry{Limits: c.Limits, IdleTimeout: c.IdleTimeout}
		s := polite.NewLocalStore(reg, polite.LocalOptions{
			Breaker: breaker.Config{Threshold: c.BreakerThreshold, OpenDelay: c.BreakerOpen, Jitter: -1},
		})
		return s, reg
	})
}

// TestLocalStoreOneController: the local store's adaptive rate is the
// controller's, answer by answer (storetest.RunAdaptive; the fleet's
// store runs the same cases in package redisstore).
func TestLocalStoreOneController(t *testing.T) {
	storetest.RunAdaptive(t, func(t *testing.T, c storetest.Config, workers int) []storetest.Worker {
		reg := &polite.Registry{Limits: c.Limits}
		s := polite.NewLocalStore(reg, polite.LocalOptions{
			Breaker: breaker.Config{Threshold: c.BreakerThreshold, OpenDelay: c.BreakerOpen, Jitter: -1},
			NewRater: func(key string, l polite.Limits) adaptive.Rater {
				return adaptive.New(polite.HostAdaptive(*c.Adaptive, l), c.Origin)
			},
		})
		return []storetest.Worker{{Store: s, Registry: reg}}
	}, 1)
}
