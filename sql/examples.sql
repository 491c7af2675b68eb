-- Example catalog rows (schema feedrouter), the same as the README's catalog section.
-- Run with:  psql "$FEEDROUTER_DATABASE_URL" -v ON_ERROR_STOP=1 -f sql/examples.sql
-- (the embedded catalog's URL: `feedrouter db status`).
-- tests/integration/test_examples.py runs this file and builds the plan it describes;
-- tests/integration/test_readme_sql.py runs the README's SQL on the embedded catalog.

BEGIN;

-- 1. A DTD: the element structure of the feed's documents; its entity declarations (&eacute;)
--    apply to documents that name a DTD in their DOCTYPE.
INSERT INTO feedrouter.dtds (name, root_element, text) VALUES ('wire', 'nitf', $dtd$
<!ENTITY eacute "&#233;">
<!ELEMENT nitf (head?, body)>
<!ELEMENT head (title?, pubdata*)>
<!ELEMENT title (#PCDATA)>
<!ELEMENT pubdata EMPTY>
<!ATTLIST pubdata edition.area CDATA #IMPLIED>
<!ELEMENT body (story*)>
<!ELEMENT story (#PCDATA)>
<!ATTLIST story lang CDATA #IMPLIED>
$dtd$);

-- 2. A feed: where its hourly batches arrive ({prefix}, {date} = YYYY-MM-DD, {hour} = HH).
INSERT INTO feedrouter.feeds (name, input_prefix, layout, dtd_id)
VALUES ('wire', 's3://acme-feeds/wire', '{prefix}/dt={date}/hour={hour}/',
        (SELECT id FROM feedrouter.dtds WHERE name = 'wire'));

-- 3. A subscriber: each of its subscriptions delivers below this prefix.
INSERT INTO feedrouter.subscribers (name, output_prefix)
VALUES ('acme-research', 's3://acme-out/research');

-- 4. Subscriptions: a name (unique per subscriber) and a query in the subscription language.
INSERT INTO feedrouter.subscriptions (subscriber_id, feed_id, name, query)
SELECT s.id, f.id, v.name, v.query
FROM feedrouter.subscribers s, feedrouter.feeds f,
     (VALUES ('sf-editions', $q$/nitf[head/pubdata[@edition.area = "SF"]]$q$),
             ('english-stories', $q$for $s in //story where $s/@lang = "en" return <story>{ $s/text() }</story>$q$),
             ('tokenized', $q$//story[tokenize(@lang, ' ') = 'en']$q$)  -- tokenize() is not supported: invalid
     ) AS v(name, query)
WHERE s.name = 'acme-research' AND f.name = 'wire';

COMMIT;

-- 5. Build the plan:     feedrouter build-plan --feed wire
-- 6. Why is a subscription not served?
--    SELECT subscriber, subscription, error_code, error_line, error_column, error_message
--    FROM feedrouter.subscription_problems WHERE feed = 'wire';
-- 7. The catalog version, and whether the latest plan build is up to date:
--    SELECT feed, catalog_version, built_version, up_to_date FROM feedrouter.feed_status;
-- 8. Join subscriptions need the feed's event time (feeds.event_time_path, event_time_format,
--    max_join_window, allowed_lateness; docs/configuration.md), e.g.
--    UPDATE feedrouter.feeds SET event_time_path = '//trade/@executed' WHERE name = 'trades';
