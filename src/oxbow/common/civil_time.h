// Calendar arithmetic on the proleptic Gregorian calendar (dates before 1970 included).
#pragma once

#include <cstdint>

namespace oxbow {

// a / b rounded toward negative infinity (b != 0).
inline int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Days since 1970-01-01 of year-month-day (month 1..12, day 1..31).
int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day);
// The year, month (1..12) and day (1..31) of a day count since 1970-01-01.
void CivilFromDays(int64_t days, int64_t* year, unsigned* month, unsigned* day);

}  // namespace oxbow
