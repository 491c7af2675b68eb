xquery version "3.1";

(:~
 : The streams of a join subscription (urn:feedrouter:stream:1): the documents of its feeds in stream
 : order and their event times. This module is the specification of those functions: feedrouter's
 : join evaluation must give what Saxon gives when it runs a subscription that imports this module.
 :
 : The harness binds one external variable, $fr:streams, to a manifest document:
 :
 :   <fr:streams xmlns:fr="urn:feedrouter:stream:1" own="books">
 :     <fr:feed name="books">
 :       <fr:message uri="file:///batch/00-000000.xml" time="2024-05-01T08:00:00Z"/>
 :       <fr:message uri="file:///batch/00-000001.xml"/>
 :     </fr:feed>
 :     <fr:feed name="blogs">
 :       <fr:message uri="file:///batch/01-000000.xml" time="2024-05-01T09:30:00Z"/>
 :     </fr:feed>
 :   </fr:streams>
 :
 : - @own names the subscription's own feed, the one fr:stream() returns;
 : - each fr:feed lists every message of that feed in the batch, in stream order (the order the
 :   messages arrived: hour, then object key); a feed with no message is listed empty;
 : - @uri is the absolute URI of the message's document, for fn:doc;
 : - @time is the message's event time, an xs:dateTime with a timezone, derived by feedrouter from the
 :   feed's event-time path and format; it is left out when that value is missing or unparsable,
 :   and such a message takes part in no join (fr:time gives the empty sequence) while fr:stream still
 :   returns its document.
 :)
module namespace fr = "urn:feedrouter:stream:1";

declare variable $fr:streams as document-node(element(fr:streams)) external;

(: Event times by document URI, built once per evaluation: fr:time runs for every pair a join
 : considers. The key is the URI of the document fn:doc returned, so whatever form Saxon gives a URI
 : is the form fr:time looks up. :)
declare %private variable $fr:times as map(xs:string, xs:dateTime) := map:merge(
  for $message in $fr:streams/fr:streams/fr:feed/fr:message[@time]
  return map:entry(string(document-uri(doc($message/@uri))), xs:dateTime($message/@time))
);

(:~ The documents of the subscription's own feed, in stream order. :)
declare function fr:stream() as document-node()* {
  fr:stream($fr:streams/fr:streams/@own)
};

(:~
 : The documents of the feed named $feed, in stream order; an unknown feed is an error.
 : "!" and not "/": a path would put the documents in document order, which XQuery leaves
 : implementation-dependent between documents. (Saxon orders documents as it loaded them, so a path
 : over the result, fr:stream()//book, keeps stream order too: this loads them in that order.)
 :)
declare function fr:stream($feed as xs:string) as document-node()* {
  let $listed := $fr:streams/fr:streams/fr:feed[@name = $feed]
  return if (exists($listed)) then $listed/fr:message ! doc(@uri)
    else error(xs:QName("fr:unknown-feed"), "no feed named '" || $feed || "' in the streams")
};

(:~ The event time of the document of $node; empty when it has none or is no message's document. :)
declare function fr:time($node as node()) as xs:dateTime? {
  let $uri := document-uri(root($node))
  return if (exists($uri)) then $fr:times(string($uri)) else ()
};

(:~ True iff both times exist and 0 < time($b) - time($a) <= $window. :)
declare function fr:followed-by($a as node(), $b as node(), $window as xs:string) as xs:boolean {
  (: the window is checked in a condition, not bound by a let: Saxon evaluates a let lazily and
   : skips it when a time is missing, and a bad window should be refused on every call :)
  if (not(fr:is-window($window))) then fr:refuse-window($window)
  else
    let $ta := fr:time($a), $tb := fr:time($b)
    return $tb gt $ta and $tb - $ta le xs:dayTimeDuration($window)
};

(:~ True iff both times exist, $a and $b are in different documents and |time($b) - time($a)| <= $window. :)
declare function fr:within($a as node(), $b as node(), $window as xs:string) as xs:boolean {
  if (not(fr:is-window($window))) then fr:refuse-window($window)
  else
    let $ta := fr:time($a), $tb := fr:time($b), $w := xs:dayTimeDuration($window)
    (: no fn:abs on durations: bound the difference both ways :)
    return $tb - $ta le $w and $ta - $tb le $w and not(root($a) is root($b))
};

(:~ Whether $window is a positive xs:dayTimeDuration (PT6H, P1DT12H, PT0.5S). :)
declare %private function fr:is-window($window as xs:string) as xs:boolean {
  $window castable as xs:dayTimeDuration and xs:dayTimeDuration($window) gt xs:dayTimeDuration("PT0S")
};

(: Typed xs:boolean so that it can stand in a branch of the functions above; it only raises. :)
declare %private function fr:refuse-window($window as xs:string) as xs:boolean {
  error(xs:QName("fr:bad-window"),
    "the window '" || $window || "' is not a positive xs:dayTimeDuration such as PT6H")
};
