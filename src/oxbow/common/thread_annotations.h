// Clang's thread-safety annotations (-Wthread-safety checks them; other compilers ignore them).
// https://clang.llvm.org/docs/ThreadSafetyAnalysis.html names each attribute. Prefixed: Abseil
// (through gRPC) defines the bare names.
#pragma once

#if defined(__clang__)
#define OXBOW_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define OXBOW_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (Mutex) or holds one for a scope (MutexLock).
#define OXBOW_CAPABILITY(x) OXBOW_THREAD_ANNOTATION(capability(x))
#define OXBOW_SCOPED_CAPABILITY OXBOW_THREAD_ANNOTATION(scoped_lockable)
// A member read or written only with the lock held.
#define OXBOW_GUARDED_BY(x) OXBOW_THREAD_ANNOTATION(guarded_by(x))
// A pointer member whose pointee is read or written only with the lock held.
#define OXBOW_PT_GUARDED_BY(x) OXBOW_THREAD_ANNOTATION(pt_guarded_by(x))
// Locks taken in this order only.
#define OXBOW_ACQUIRED_AFTER(...) OXBOW_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define OXBOW_ACQUIRED_BEFORE(...) OXBOW_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
// A function called with the lock held (REQUIRES) or not held (EXCLUDES).
#define OXBOW_REQUIRES(...) OXBOW_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define OXBOW_EXCLUDES(...) OXBOW_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// A function that takes (ACQUIRE) or lets go of (RELEASE) the lock.
#define OXBOW_ACQUIRE(...) OXBOW_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define OXBOW_RELEASE(...) OXBOW_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define OXBOW_TRY_ACQUIRE(...) OXBOW_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// A function returning a reference to the lock.
#define OXBOW_RETURN_CAPABILITY(x) OXBOW_THREAD_ANNOTATION(lock_returned(x))
// A function the analysis does not check (say why beside it).
#define OXBOW_NO_THREAD_SAFETY_ANALYSIS OXBOW_THREAD_ANNOTATION(no_thread_safety_analysis)
