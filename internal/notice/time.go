package notice

import (
	"time"
	_ "time/tzdata" // publication days are Sydney dates on every machine
)

// TimestampLayout is the service's timestamp form: RFC 3339, UTC, milliseconds.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// DateLayout is the service's date form.
const DateLayout = "2006-01-02"

// Sydney is the time zone that defines a notice's publication day.
var Sydney = mustLoad("Australia/Sydney")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic("notice: time zone " + name + " not available: " + err.Error())
	}
	return loc
}

// Timestamp formats t in the service's timestamp form.
func Timestamp(t time.Time) string { return t.UTC().Format(TimestampLayout) }

// PublishedDate returns the calendar date of t in Australia/Sydney.
func PublishedDate(t time.Time) string { return t.In(Sydney).Format(DateLayout) }

// ParseDate parses a YYYY-MM-DD date strictly.
func ParseDate(s string) (time.Time, bool) {
	if len(s) != 10 {
		return time.Time{}, false
	}
	t, err := time.Parse(DateLayout, s)
	return t, err == nil
}
