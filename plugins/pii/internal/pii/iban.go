package pii

// ibanLength is each country's IBAN length, from the SWIFT IBAN registry
// (ISO 13616).
var ibanLength = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27, "BR": 29, "BY": 28,
	"CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
	"FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HN": 28, "HR": 21, "HU": 28,
	"IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
	"LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28,
	"NL": 18, "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24,
	"SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26,
	"UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}

// ibans finds IBANs: a country code, check digits and the country's
// length of letters and digits, written whole or in groups of four
// separated by single spaces, passing the mod-97 check.
func ibans(text string) []Finding {
	var out []Finding
	for i := 0; i+4 <= len(text); i++ {
		if !isUpper(text[i]) || !isUpper(text[i+1]) || !isDigit(text[i+2]) || !isDigit(text[i+3]) || i > 0 && isAlnum(text[i-1]) {
			continue
		}
		n, ok := ibanLength[text[i:i+2]]
		if !ok {
			continue
		}
		var b []byte
		j := i
		for j < len(text) && len(b) < n {
			c := text[j]
			switch {
			case isDigit(c) || isUpper(c):
				b = append(b, c)
				j++
			case c == ' ' && len(b)%4 == 0 && len(b) > 0 && j+1 < len(text) && isAlnum(text[j+1]):
				j++
			default:
				j = len(text) + 1 // stop: too short
			}
		}
		if len(b) != n || j < len(text) && isAlnum(text[j]) {
			continue
		}
		if mod97(string(b)) == 1 {
			out = append(out, Finding{IBAN, i, j})
			i = j - 1
		}
	}
	return out
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

// mod97 is ISO 7064 MOD 97-10 of an IBAN: the first four characters
// moved to the end, letters as 10..35.
func mod97(iban string) int {
	r := 0
	for _, c := range iban[4:] + iban[:4] {
		if c >= 'A' {
			v := int(c-'A') + 10
			r = (r*100 + v) % 97
		} else {
			r = (r*10 + int(c-'0')) % 97
		}
	}
	return r
}
