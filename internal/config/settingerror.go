package config

// SettingError is a setting that is wrong in a way only a server can tell
// (a password it refuses, a CA that does not sign its certificate, a master
// name its Sentinels do not know). Commands exit with status 2 on it, as on
// any other wrong setting: nothing was done. Message never holds a secret.
type SettingError struct {
	// Setting is the NOTICES_* variable to correct.
	Setting string
	// Message says what is wrong and what to do; it names Setting.
	Message string
}

func (e *SettingError) Error() string { return e.Message }
