import { Observable, type Observer, type Subscriber, type Subscription } from 'rxjs';

/**
 * Subscribes `observer` to `source` through a subscriber that is a child of `destination`.
 *
 * Closing the destination (an error sent to it, or the consumer unsubscribing) then closes the source's
 * subscriber at once, so even a synchronous source that is still emitting inside `subscribe` stops (as it
 * does under `take` or `first`); a bare observer would keep pulling until the source ends. The hand-written
 * operators of this package subscribe to their sources this way.
 *
 * Whatever the operator's `next` throws (a malformed event it cannot read) goes to the destination as an error
 * notification, as a `map` would send it; otherwise RxJS would only report it as unhandled and the stream would
 * go on as if nothing had happened.
 *
 * @param source The upstream.
 * @param destination The operator's own subscriber.
 * @param observer The operator's handlers for the upstream's notifications.
 * @returns The upstream subscription.
 */
export function subscribeLinked<T>(
  source: Observable<T>,
  destination: Subscriber<unknown>,
  observer: Partial<Observer<T>>,
): Subscription {
  const { next } = observer;
  const guarded: Partial<Observer<T>> =
    next === undefined
      ? observer
      : {
          next(value) {
            try {
              next.call(observer, value);
            } catch (error) {
              destination.error(error);
            }
          },
          error: observer.error?.bind(observer),
          complete: observer.complete?.bind(observer),
        };
  return new Observable<T>((inner) => {
    destination.add(inner);
    source.subscribe(inner);
  }).subscribe(guarded);
}
