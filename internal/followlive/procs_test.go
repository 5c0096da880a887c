package followlive

import "testing"

func TestVmHWM(t *testing.T) {
	status := "Name:\tpolite\nVmPeak:\t  900 kB\nVmHWM:\t  152136 kB\nVmRSS:\t  98280 kB\n"
	if got := vmHWM([]byte(status)); got != 152136 {
		t.Errorf("vmHWM = %d, want 152136", got)
	}
	if got := vmHWM([]byte("Name:\tx\n")); got != 0 {
		t.Errorf("vmHWM of no line = %d", got)
	}
}
