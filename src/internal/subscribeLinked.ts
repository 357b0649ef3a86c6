import { Observable, type Observer, type Subscriber, type Subscription } from 'rxjs';

/**
 * Subscribes `observer` to `source` through a subscriber that is a child of `destination`.
 *
 * Closing the destination (an error sent to it, or the consumer unsubscribing) then closes the source's
 * subscriber at once, so even a synchronous source that is still emitting inside `subscribe` stops (as it
 * does under `take` or `first`); a bare observer would keep pulling until the source ends. The hand-written
 * operators of this package subscribe to their sources this way.
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
  return new Observable<T>((inner) => {
    destination.add(inner);
    source.subscribe(inner);
  }).subscribe(observer);
}
