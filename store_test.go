package polite_test

import (
	"testing"

	"github.com/polite-go/polite"
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
