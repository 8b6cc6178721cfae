/* tt_faults.c: see tt_faults.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  /* pthread_setname_np */
#endif
#include "tt_faults.h"

#include <pthread.h>
#include <string.h>

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
/* Each side takes its first lock before either asks for its second, so the
 * deadlock happens every time, not once in a while as in real life. */
static pthread_barrier_t both_hold_one;

static void *deadlock_worker(void *unused)
{
    pthread_mutex_lock(&lock_b);
    pthread_barrier_wait(&both_hold_one);
    pthread_mutex_lock(&lock_a);  /* TOUR: worker blocks (the caller holds A) */
    return NULL;
}

int tt_deadlock(tt_error *err)
{
    pthread_t worker;
    int rc;

    pthread_barrier_init(&both_hold_one, NULL, 2);
    pthread_mutex_lock(&lock_a);
    if ((rc = pthread_create(&worker, NULL, deadlock_worker, NULL)) != 0) {
        pthread_mutex_unlock(&lock_a);
        pthread_barrier_destroy(&both_hold_one);
        tt_error_set(err, TT_ERR_RUNTIME, "cannot start the deadlock's worker thread: pthread_create: %s",
                     strerror(rc));
        return -1;
    }
    pthread_setname_np(worker, "tt-deadlock");
    pthread_barrier_wait(&both_hold_one);
    pthread_mutex_lock(&lock_b);  /* TOUR: caller blocks (the worker holds B) */
    return 0;  /* never reached */
}
