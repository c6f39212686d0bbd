/*
 * banned.h: functions the code does not use, as git's banned.h: each has a
 * bounded or reentrant replacement (memcpy or snprintf with the size,
 * strtok_r, strtol with its checks).  Included last by harness.h, after
 * the system headers, so that a use fails to compile.
 */
#ifndef BANNED_H
#define BANNED_H

#define BANNED(func) sorry_##func##_is_banned_in_agent_harness

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef atoi
#define atoi(x) BANNED(atoi)
#undef gets
#define gets(x) BANNED(gets)

#endif
